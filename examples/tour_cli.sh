# Tour, part 3: the command line (run: bash examples/tour_cli.sh [DIR])
set -euo pipefail
DIR="${1:-$(mktemp -d)}"
pyhudi create "$DIR/t" --schema "id:string,clicks:long,country:string" --buckets 2 \
  --family "activity=clicks" --family "profile=country"
printf 'id,clicks,country\na,1,FR\nb,2,US\n' > "$DIR/rows.csv"
printf 'id,clicks\na,5\n' > "$DIR/clicks.csv"
pyhudi write "$DIR/t" "$DIR/rows.csv"                       # full rows
pyhudi write "$DIR/t" "$DIR/clicks.csv"                     # the activity family only
pyhudi read "$DIR/t" --filter "clicks>=2" --sort id
pyhudi timeline "$DIR/t"
pyhudi files "$DIR/t"
pyhudi stats "$DIR/t" filesizes
pyhudi compact "$DIR/t" --families activity --dry-run       # the plan, not written
pyhudi compact "$DIR/t" --full
pyhudi clean "$DIR/t" --option hoodie.cleaner.commits.retained=1
LAST=$(pyhudi timeline "$DIR/t" --json | python -c 'import json,sys; print(json.load(sys.stdin)[-1]["requested_time"])')
pyhudi show-instant "$DIR/t" "$LAST"                         # the clean's plan and metadata, decoded
pyhudi draw "$DIR/t" -o "$DIR/t.png"
