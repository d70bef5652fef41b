"""commlens: an NCCL profiler plugin, and the tool that reads what it records.

In a Python job, before the process group (NCCL's first communicator) is made:

    import commlens; commlens.enable("runs/exp1")

then, after the job, `commlens report runs/exp1` says which rank and channel made the others
wait. Outside Python: `export NCCL_PROFILER_PLUGIN=$(commlens --plugin-path)`.
"""
import os
import sys
import warnings

from commlens._build import SETTINGS, VERSION

__version__ = VERSION
__all__ = ["enable", "plugin_path", "cli_path", "__version__"]

_HERE = os.path.dirname(os.path.abspath(__file__))


def _bundled(*parts):
    path = os.path.join(_HERE, *parts)
    if not os.path.isfile(path):
        raise FileNotFoundError("commlens: %s is missing from the installed package "
                                "(reinstall the wheel)" % path)
    return path


def plugin_path():
    """The absolute path of the bundled profiler plugin, the value NCCL_PROFILER_PLUGIN takes."""
    return _bundled("lib", "libnccl-profiler-commlens.so")


def cli_path():
    """The absolute path of the bundled `commlens` program (report, merge, env)."""
    return _bundled("bin", "commlens")


def _process_group_made():
    """True when torch.distributed already has a process group: NCCL may have read its
    environment by then, so setting it now may come too late."""
    dist = sys.modules.get("torch.distributed")
    try:
        return bool(dist is not None and dist.is_available() and dist.is_initialized())
    except Exception:  # an odd torch build: no answer is no reason to stop the job
        return False


def enable(dir=None, **settings):
    """Turns the profiler on for this process and the processes it starts.

    Sets NCCL_PROFILER_PLUGIN to the bundled plugin and, when `dir` is given, COMMLENS_DIR to its
    absolute path (without it, each job writes to ./commlens-<job id>). Further settings are
    the plugin's variables without their prefix, in lower case: enable(d, output="both",
    cupti="full") sets COMMLENS_OUTPUT and COMMLENS_CUPTI (`commlens env` lists them all).

    NCCL reads these when it makes its first communicator, so call this before the process
    group is made (before torch.distributed.init_process_group with a device_id, or before the
    first collective); a warning says so when a process group exists already.
    Returns the output directory set, or None when the plugin's default applies."""
    env = {}
    for key, value in settings.items():
        name = "COMMLENS_" + key.upper()
        if name not in SETTINGS or name == "COMMLENS_DIR":
            raise TypeError("commlens.enable(): no setting %r (the plugin's settings: %s)"
                            % (key, ", ".join(s[len("COMMLENS_"):].lower() for s in SETTINGS
                                              if s != "COMMLENS_DIR")))
        env[name] = str(value)
    if dir is not None:
        env["COMMLENS_DIR"] = os.path.abspath(os.fspath(dir))
    plugin = plugin_path()
    before = os.environ.get("NCCL_PROFILER_PLUGIN")
    if before and before != plugin:
        warnings.warn("commlens.enable(): NCCL_PROFILER_PLUGIN was %r; it is now commlens's plugin "
                      "(%s)" % (before, plugin), stacklevel=2)
    if _process_group_made():
        warnings.warn("commlens.enable() was called after the process group was made: NCCL may "
                      "have started without the profiler; call it before "
                      "torch.distributed.init_process_group", stacklevel=2)
    os.environ["NCCL_PROFILER_PLUGIN"] = plugin
    os.environ.update(env)
    return env.get("COMMLENS_DIR")
