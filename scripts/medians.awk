# medians.awk: lines "NAME METRIC VALUE", sorted by name, metric and value
# (sort -k1,1 -k2,2 -k3,3g), become "NAME METRIC MEDIAN", one per pair.
# Shared by the bench scripts that take medians of interleaved rounds.
{ key = $1 " " $2; v[key, ++n[key]] = $3; keys[key] = 1 }
END {
	for (k in keys) {
		c = n[k]
		m = (c % 2) ? v[k, (c + 1) / 2] : (v[k, c / 2] + v[k, c / 2 + 1]) / 2
		print k, m
	}
}
