// Regenerates the RFC 8785 oracle files next to this script from Node's own
// Number::toString and JSON.stringify (the ECMAScript behaviour JCS is defined
// by):  node lib/jsonx/testdata/canon/gen.js
// numbers.txt: "<ieee754 bits as 16 hex> <ECMAScript string>" per line.
// cases.txt:   "<input JSON>\t<canonical JSON>" per line.
'use strict';
const fs = require('fs');
const path = require('path');
const dir = __dirname;

// A small deterministic PRNG (xorshift64*) so the files are reproducible.
let state = 0x9E3779B97F4A7C15n;
function next64() {
  state ^= state >> 12n; state ^= (state << 25n) & 0xFFFFFFFFFFFFFFFFn; state ^= state >> 27n;
  return (state * 0x2545F4914F6CDD1Dn) & 0xFFFFFFFFFFFFFFFFn;
}
const buf = new DataView(new ArrayBuffer(8));
function fromBits(b) { buf.setBigUint64(0, b); return buf.getFloat64(0); }
function bitsOf(x) { buf.setFloat64(0, x); return buf.getBigUint64(0); }
const hex = b => b.toString(16).padStart(16, '0');

const nums = [];
const edge = [0, -0, 5e-324, -5e-324, 1.7976931348623157e308, -1.7976931348623157e308,
  9007199254740992, -9007199254740992, 9007199254740991, 295147905179352830000,
  9.999999999999997e22, 1e23, 1.0000000000000001e23, 999999999999999700000, 999999999999999900000,
  1e21, 1e-7, 9.999999999999997e-7, 0.000001, 333333333.3333332, 333333333.33333325,
  333333333.3333333, 333333333.3333334, 333333333.33333343, -0.0000033333333333333333,
  1424953923781206.2, 4.5, 0.002, 1e-27, 1e30, 0.1, 0.2, 0.30000000000000004, 123456789012345680000,
  1.5e-6, 1e-6, 2e-7, 100, 1e20, 1e22, 65536, 2.5, -1, 1/3, Math.PI, Math.E];
for (const x of edge) nums.push(x);
for (let i = 0; i < 3000; i++) {
  const x = fromBits(next64());
  if (Number.isFinite(x)) nums.push(x);
}
for (let i = 0; i < 2000; i++) {
  // Decimal-looking values around the fixed/exponent switch points.
  const m = Number(next64() % 100000000000000000n) / 1e17;
  const e = Number(next64() % 60n) - 30;
  nums.push(m * Math.pow(10, e));
  nums.push(Number(next64() % 10000000n) / Math.pow(10, Number(next64() % 12n)));
}
fs.writeFileSync(path.join(dir, 'numbers.txt'),
  nums.map(x => hex(bitsOf(x)) + ' ' + String(x)).join('\n') + '\n');

function canon(v) {
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (Array.isArray(v)) return '[' + v.map(canon).join(',') + ']';
  return '{' + Object.keys(v).sort().map(k => JSON.stringify(k) + ':' + canon(v[k])).join(',') + '}';
}
const inputs = [
  '{"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001],"string":"\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/","literals":[null,true,false]}',
  '{"\\u20ac":"Euro Sign","\\r":"Carriage Return","\\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One","\\ud83d\\ude00":"Emoji: Grinning Face","\\u0080":"Control","\\u00f6":"Latin Small Letter O With Diaeresis"}',
  '[56,{"d":true,"10":null,"1":[]}]',
  '{"peach":"This sorting order","p\\u00e9ch\\u00e9":"is wrong according to French","p\\u00eache":"but canonicalization MUST","sin":"ignore locale"}',
  '{"1":{"f":{"f":"hi","F":5},"\\n":56.0},"10":{},"":"empty","a":{},"111":[{"e":"yes","E":"no"}],"A":{}}',
  '{"Unnormalized Unicode":"A\\u030a"}',
  '{"\\u20ac":"Euro Sign","1":"One","\\u0080":"Control\\u007f","\\ud83d\\ude02":"Smiley","\\u00f6":"Latin Small Letter O With Diaeresis","\\ufb33":"Hebrew Letter Dalet With Dagesh","</script>":"Browser Challenge"}',
  '{"\\uffff":1,"\\ud800\\udc00":2,"\\ue000":3,"z":4,"\\u00ff":5}',
  '{"ctl":"\\u0000\\u0001\\u0008\\u0009\\u000a\\u000b\\u000c\\u000d\\u001f\\u007f\\u2028\\u2029"}',
  '[-0,0.0,1.0,-1.50,1e0,1E+2,1e-2,12345678901234567890,0.1e1,100e-2]',
  '  { "a" : [ 1 , 2 , { "b" : "c" } ] , "b" : { } , "c" : [ ] }  ',
];
fs.writeFileSync(path.join(dir, 'cases.txt'),
  inputs.map(s => s.trim() + '\t' + canon(JSON.parse(s))).join('\n') + '\n');
