"""Package discovery: the top-level source folders ship inside the `trnprof` namespace.

collectors/ -> trnprof.collectors, rules/ -> trnprof.rules, sample_traces/ ->
trnprof.sample_traces, so an install never squats generic top-level names. Every other
setting lives in pyproject.toml.
"""

from setuptools import find_packages, setup

FOLDERS = {
    "trnprof": "trnprof",
    "trnprof.collectors": "collectors",
    "trnprof.rules": "rules",
    "trnprof.sample_traces": "sample_traces",
}

packages = []
for package, folder in FOLDERS.items():
    packages.append(package)
    packages += [f"{package}.{sub}" for sub in find_packages(folder)]

setup(packages=packages, package_dir=FOLDERS)
