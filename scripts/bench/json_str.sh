# json_str S: S as a JSON string literal on stdout (backslashes and quotes escaped; tabs, CRs and
# newlines as spaces). Sourced by the benchmark scripts that write JSONL rows.
json_str() {
  local s=${1//\\/\\\\}
  s=${s//\"/\\\"}
  s=${s//$'\t'/ }
  s=${s//$'\r'/ }
  printf '"%s"' "${s//$'\n'/ }"
}
