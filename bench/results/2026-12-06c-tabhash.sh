#!/bin/bash
# tabhash.sh PHOSPHOR DIR: per table, rows and sha256 of its CSV sorted by every column.
P=$1; D=$2
for t in slices instants counters logs threads args async_slices flows processes drops problems switches off_cpu samples frames allocations heap mappings; do
  cols=$($P sql "$D" "SELECT * FROM $t LIMIT 1" --csv 2>/dev/null | head -1)
  n=$($P sql "$D" "SELECT count(*) FROM $t" --csv 2>/dev/null | tail -1)
  if [ -z "$cols" ]; then echo "$t $n empty"; continue; fi
  order=$(echo "$cols" | sed 's/\([^,]*\)/"\1"/g')
  h=$($P sql "$D" "SELECT * FROM $t ORDER BY $order" --csv 2>/dev/null | sha256sum | cut -c1-16)
  echo "$t $n $h"
done
