// The live tail of the events page: server-sent events from the address in
// #live's data-stream, each a JSON record appended as a table row. Every
// value goes in through textContent, never as HTML.
"use strict";
(function () {
  var live = document.getElementById("live");
  var rows = document.getElementById("eventrows");
  var state = document.getElementById("livestate");
  if (!live || !rows || !window.EventSource) {
    return;
  }
  var src = new EventSource(live.getAttribute("data-stream"));
  src.onopen = function () { state.textContent = "on"; };
  src.onerror = function () { state.textContent = "reconnecting"; };
  src.onmessage = function (ev) {
    var rec;
    try { rec = JSON.parse(ev.data); } catch (e) { return; }
    var red = rec.redaction && rec.redaction.count ? rec.redaction.count : 0;
    var cells = [rec.time, rec.subject + "#" + rec.seq, rec.type, rec.role || "", String(red), JSON.stringify(rec.attrs || {})];
    var tr = document.createElement("tr");
    tr.className = "new";
    cells.forEach(function (text, i) {
      var td = document.createElement("td");
      if (i === 5) {
        var code = document.createElement("code");
        code.textContent = text;
        td.appendChild(code);
      } else {
        td.textContent = String(text);
      }
      tr.appendChild(td);
    });
    rows.appendChild(tr);
  };
}());
