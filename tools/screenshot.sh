#!/bin/sh
# screenshot.sh: a PNG of an HTML page as headless Chromium draws it (the top WIDTHxHEIGHT pixels),
# bounded to 60 s, in a throw-away profile; made smaller with pngquant where it is installed.
#   sh tools/screenshot.sh PAGE.html OUT.png [WIDTHxHEIGHT]   (default 1400x3000)
# Exit status non-zero, silently, if Chromium is missing or drew nothing. docs/report.png is
#   (cd test/data/verdict && commlens report persistent_ddp --html /tmp/page.html) &&
#   sh tools/screenshot.sh /tmp/page.html docs/report.png 1000x1320
page=${1:?usage: screenshot.sh PAGE.html OUT.png [WIDTHxHEIGHT]}
out=${2:?usage: screenshot.sh PAGE.html OUT.png [WIDTHxHEIGHT]}
size=${3:-1400x3000}
chromium=$(command -v chromium || command -v chromium-browser) || exit 1
case $page in /*) ;; *) page=$PWD/$page ;; esac
ud=$(mktemp -d) || exit 1
timeout 60 "$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync --user-data-dir="$ud" \
  --hide-scrollbars --window-size="$(echo "$size" | tr x ,)" --screenshot="$out" "file://$page" >/dev/null 2>&1
rc=$?; rm -rf "$ud"
[ "$rc" -eq 0 ] && [ -s "$out" ] || exit 1
if command -v pngquant >/dev/null 2>&1; then pngquant --quality=60-85 --speed 1 --force --output "$out" "$out" 2>/dev/null; fi
exit 0
