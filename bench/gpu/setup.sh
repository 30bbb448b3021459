# Sourced on a lent GPU box (the device tool) by bench/gpu/all.sh: `source bench/gpu/setup.sh`.
# The box has python3 with torch, torchvision and triton but not textual: the wheels made here by
# bench/gpu/wheels.sh travel in .whl/ (carry: [".whl"]) and go into /tmp/site, once a machine (a
# stamp names them, so the next call on a warm machine skips the install). /tmp/site and the
# working tree then come first on PYTHONPATH: tuimon is imported from the working tree.
# Returns non-zero, with one line, when what tuimon needs does not import.
GPU_SITE=${GPU_SITE:-/tmp/site}
WHEELS=${WHEELS:-.whl}
if ls "$WHEELS"/*.whl >/dev/null 2>&1; then
  stamp=$(ls "$WHEELS"/*.whl | sort | sha1sum | cut -c1-12)
  if [ "$(cat "$GPU_SITE/.carried" 2>/dev/null)" != "$stamp" ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target "$GPU_SITE" "$WHEELS"/*.whl >/tmp/pip-carry.log 2>&1 \
      || { echo "setup: pip install of $WHEELS into $GPU_SITE failed:"; tail -5 /tmp/pip-carry.log; return 1; }
    echo "$stamp" >"$GPU_SITE/.carried"
  fi
  export PYTHONPATH=$GPU_SITE:$PWD${PYTHONPATH:+:$PYTHONPATH}
else
  echo "setup: no wheels in $WHEELS/ (bench/gpu/wheels.sh makes them): this python3's own packages are used"
  export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONUNBUFFERED=1
# The carried pytest with the box's own plugins, if they load; else the carried plugins only.
if ! python3 -m pytest --version >/dev/null 2>&1; then
  echo "setup: the box's pytest plugins do not load with the carried pytest: the carried ones only"
  export PYTEST_DISABLE_PLUGIN_AUTOLOAD=1
  export PYTEST_ADDOPTS="-p pytest_timeout -p pytest_asyncio.plugin -p xdist.plugin -p syrupy -p pytest_textual_snapshot"
fi
if ! err=$(python3 -c "import textual, rich, psutil, pynvml, torch, tuimon" 2>&1); then
  echo "setup: what tuimon needs does not import: $(echo "$err" | tail -1)"
  return 1
fi
