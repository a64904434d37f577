"""Writes the METADATA of the hvd distribution that `cmake --install` puts
beside the package (hvd-<version>.dist-info), from pyproject.toml, so that
it says what a wheel built by setup.py says:

    python3 write_metadata.py pyproject.toml VERSION OUT
"""
import sys
import tomllib


def metadata(project, version):
    lines = ["Metadata-Version: 2.1", "Name: " + project["name"], "Version: " + version,
             "Summary: " + project["description"],
             "Requires-Python: " + project["requires-python"]]
    lines += ["Requires-Dist: " + dep for dep in project.get("dependencies", [])]
    for extra, deps in project.get("optional-dependencies", {}).items():
        lines.append("Provides-Extra: " + extra)
        lines += ['Requires-Dist: %s ; extra == "%s"' % (dep, extra) for dep in deps]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: write_metadata.py PYPROJECT VERSION OUT")
    with open(sys.argv[1], "rb") as f:
        project = tomllib.load(f)["project"]
    with open(sys.argv[3], "w") as out:
        out.write(metadata(project, sys.argv[2]))
