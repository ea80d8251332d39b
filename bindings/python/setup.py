"""Tags a wheel for this platform when libparley.so.0 is copied into the package.

The package itself is pure Python (ctypes); only a bundled native library ties a wheel to one
operating system and machine. Everything else is in pyproject.toml.
"""

import pathlib

from setuptools import Distribution, setup

try:  # setuptools 70.1 and later carry bdist_wheel; before, the wheel package does
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:
    try:
        from wheel.bdist_wheel import bdist_wheel
    except ImportError:  # no wheel support at all: nothing to tag
        bdist_wheel = None

BUNDLED = (pathlib.Path(__file__).resolve().parent / "parley" / "libparley.so.0").is_file()


class BundlingDistribution(Distribution):
    """A distribution holding native code (installed as platform files) when bundling."""

    def has_ext_modules(self):
        return BUNDLED


commands = {}
if bdist_wheel is not None and BUNDLED:
    class PlatformWheel(bdist_wheel):
        """py3-none-<platform>: any Python 3, this machine's libparley."""

        def get_tag(self):
            _, _, platform = super().get_tag()
            return "py3", "none", platform

    commands["bdist_wheel"] = PlatformWheel

setup(distclass=BundlingDistribution, cmdclass=commands)
