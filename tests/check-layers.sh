#!/bin/sh
# The layers' arrows point down: tools -> agent -> actions -> engine.  Fails
# on any include that names a higher layer than its own file's, and on any
# project include that does not name its layer ("msg.h" instead of
# "engine/msg.h").  Inside agent/, the folders are layers of their own (see
# agent_rank): a file includes its own folder and folders ranked strictly
# below, so no include circle can span two folders.  Run by `make check`; `sh tests/check-layers.sh DIR` checks
# another tree.
set -eu
src=${1:-${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}}
cd "$src"
rank() {
    case $1 in
    engine) echo 0 ;; actions) echo 1 ;; agent) echo 2 ;; tools) echo 3 ;; *) echo 9 ;;
    esac
}
# agent/'s folders, bottom up: the configuration; network plumbing and the
# alert lifecycle; inputs, outputs and the cluster; the server that ties them
# together; what serves it over HTTP and the control socket; the processes.
agent_rank() {
    case $1 in
    conf) echo 0 ;; net | alerting) echo 1 ;; input | output | cluster) echo 2 ;;
    core) echo 3 ;; web) echo 4 ;; proc) echo 5 ;; *) echo 9 ;;
    esac
}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
bad=0
checked=0
for layer in engine actions agent tools; do
    mine=$(rank "$layer")
    for f in "$layer"/*.c "$layer"/*.h "$layer"/*/*.c "$layer"/*/*.h; do
        [ -e "$f" ] || continue
        checked=$((checked + 1))
        # every line of the form #include "x" or #include "dir/x.h", with its number
        grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" | while IFS= read -r hit; do
            line=${hit%%:*}
            name=$(printf '%s\n' "$hit" | sed 's/.*include[[:space:]]*"\([^"]*\)".*/\1/')
            case $name in
            config.h) continue ;;
            */*) ;;
            *) echo "$f:$line: include \"$name\" does not name its layer (write \"$layer/$name\" or the layer it is in)"; continue ;;
            esac
            theirs=$(rank "${name%%/*}")
            if [ "$layer" = agent ] && [ "$theirs" -eq 2 ]; then
                from=${f#agent/}
                to=${name#agent/}
                case $from in */*) from=${from%%/*} ;; *) from=flat ;; esac
                case $to in */*) to=${to%%/*} ;; *) to=flat ;; esac
                if [ "$(agent_rank "$from")" -eq 9 ] || [ "$(agent_rank "$to")" -eq 9 ]; then
                    echo "$f:$line: include \"$name\": agent/ files live in one of its folders (see agent_rank)"
                elif [ "$from" != "$to" ] && [ "$(agent_rank "$to")" -ge "$(agent_rank "$from")" ]; then
                    echo "$f:$line: agent/$from/ includes \"$name\": agent/$to/ is not below it (see agent_rank)"
                fi
            fi
            if [ "$theirs" -eq 9 ]; then
                echo "$f:$line: include \"$name\" is outside the layers (engine, actions, agent, tools)"
            elif [ "$theirs" -gt "$mine" ]; then
                echo "$f:$line: $layer/ includes \"$name\": an arrow pointing up (tools -> agent -> actions -> engine)"
            fi
        done
    done
done > "$out"
if [ -s "$out" ]; then
    cat "$out"
    bad=$(wc -l < "$out")
fi
echo "layers: $checked files checked, $bad bad includes"
[ "$bad" -eq 0 ]
