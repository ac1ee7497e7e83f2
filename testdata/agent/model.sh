#!/bin/sh
# A "model" for --provider exec: Request JSON on stdin, one Decision line out.
step=$(grep -o '"step":[0-9]*' | head -n 1 | cut -d: -f2)
echo "model.sh: deciding step $step" >&2
case $step in
1) echo '{"action":"read_file","path":"calc.go"}' ;;
2) echo '{"action":"replace_text","path":"calc.go","old":"return a - b","new":"return a + b"}' ;;
3) echo '{"action":"verify"}' ;;
*) echo '{"action":"finish","summary":"Add fixed and verified"}' ;;
esac
