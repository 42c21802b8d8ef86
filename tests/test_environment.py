"""environment.yml mirrors the dependencies of pyproject.toml.

The rule: the conda environment lists every package of ``[project].dependencies`` and of the
``test`` and ``notebooks`` extras, and nothing else besides ``python``, ``pip`` and the
``pip:`` section that installs jitterlab itself. The ``mpi`` and ``docs`` extras are left out
of the conda file. Names are compared after lower-casing, treating ``-``, ``_`` and ``.`` alike
and dropping version specifiers, extras and environment markers; conda-forge uses the PyPI
names for all of these packages, so no renaming table is needed.
"""

import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
MIRRORED_EXTRAS = {"test", "notebooks"}
EXCLUDED_EXTRAS = {"mpi", "docs"}
CONDA_ONLY = {"python", "pip"}


def dependency_name(requirement: str) -> str:
    """The normalized package name of a pip or conda requirement string."""
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    assert match, f"cannot read a package name from {requirement!r}"
    return re.sub(r"[-_.]+", "-", match.group(1)).lower()


def pyproject_names() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = list(project["dependencies"])
    for extra in MIRRORED_EXTRAS:
        requirements += project["optional-dependencies"][extra]
    return {dependency_name(r) for r in requirements}


def environment_names() -> set[str]:
    environment = yaml.safe_load((ROOT / "environment.yml").read_text())
    entries = [e for e in environment["dependencies"] if isinstance(e, str)]
    return {dependency_name(e) for e in entries} - CONDA_ONLY


def test_same_dependencies():
    in_pyproject, in_environment = pyproject_names(), environment_names()
    assert in_environment - in_pyproject == set(), "in environment.yml but not pyproject.toml"
    assert in_pyproject - in_environment == set(), "in pyproject.toml but not environment.yml"


def test_extras_are_all_accounted_for():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert set(project["optional-dependencies"]) == MIRRORED_EXTRAS | EXCLUDED_EXTRAS


def test_environment_installs_the_package_and_python():
    environment = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert environment["name"] == "jitterlab"
    assert "python=3.11" in environment["dependencies"]
    (pip_section,) = [e for e in environment["dependencies"] if isinstance(e, dict)]
    assert pip_section["pip"] == ["-e ."]


def test_dependency_name():
    assert dependency_name("NetCDF4 >=1.6") == "netcdf4"
    assert dependency_name("Foo_Bar[extra]>=1; python_version < '4'") == "foo-bar"
    assert dependency_name("python=3.11") == "python"
