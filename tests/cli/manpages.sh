# manpages.sh — every man page: the one footer form (.TH NAME SECTION DATE
# "hat VERSION" "hat manual", VERSION the programs' --version), formatted
# by man(1) without a warning at 80 and 120 columns, and every program has
# its page in man/man1.
. "$HAT_TOP/tests/cli/lib.sh"
T=$(mktmp)
ver=$(world-gen --version | awk '{print $NF}')
for f in "$HAT_TOP"/man/man*/*.[157]; do
    n=${f#"$HAT_TOP"/}
    th=$(grep -m 1 '^\.TH ' "$f")
    case $th in
        ".TH "*" "[0-9]" 20"[0-9][0-9]-[0-9][0-9]-[0-9][0-9]" \"hat $ver\" \"hat manual\"") pass "$n: footer" ;;
        *) flunk "$n: footer" "$th" ;;
    esac
    for w in 80 120; do
        MANWIDTH=$w man --warnings -l "$f" >/dev/null 2>"$T/err"
        [ ! -s "$T/err" ] && pass "$n: no warnings at $w columns" || flunk "$n: no warnings at $w columns" "$(head -n 3 "$T/err")"
    done
done
for p in "$HAT_TOP"/cmd/*.c; do
    n=$(basename "$p" .c)
    [ -r "$HAT_TOP/man/man1/$n.1" ] && pass "$n has man/man1/$n.1" || flunk "$n has man/man1/$n.1"
done
