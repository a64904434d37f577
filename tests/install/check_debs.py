"""Builds the .deb files of a build tree with cpack, unpacks them into a
scratch root with dpkg-deb -x, and checks that they are complete and
installable:

- each package holds its files (the SONAME link and the -dev link included)
  and no file is in two packages; libhvd1 has a shlibs file and runs
  ldconfig, python3-hvd byte-compiles its modules (py3compile/py3clean);
- every library a binary needs (objdump -p NEEDED) comes from a package its
  Depends names (dpkg -S), from libhvd1, or -- only in a CUDA build -- from
  the CUDA toolkit, which no Debian package provides;
- RPATHs are $ORIGIN-relative and lead to libhvd inside the unpacked tree;
  the unpacked Python package imports and loads the unpacked libhvd;
- apt, given an empty dpkg status (a bare machine), can resolve every
  dependency of the five packages from the Debian archive.

    check_debs.py BUILD_DIR LIBDIR SOURCE_DIR WITH_CUDA(ON/OFF)
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

build, libdir, src, with_cuda = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "ON"
failures = []


def check(ok, message):
    if not ok:
        failures.append(message)
        print("FAIL: " + message)


def run(*cmd, **kw):
    return subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True, **kw).stdout


def field(deb, name):
    return run("dpkg-deb", "-f", deb, name).strip()


def depends_names(depends):
    """{'libc6', 'default-jre-headless', 'java11-runtime-headless', ...}"""
    return {re.sub(r"[\s(:].*", "", alt.strip()) for dep in depends.split(",") if dep.strip()
            for alt in dep.split("|")}


def elf_info(path):
    out = run("objdump", "-p", path)
    needed = re.findall(r"^\s+NEEDED\s+(\S+)", out, re.M)
    runpath = re.findall(r"^\s+(?:RUNPATH|RPATH)\s+(\S+)", out, re.M)
    return needed, (runpath[0].split(":") if runpath else [])


def is_elf(path):
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


def resolved(path):
    """{SONAME: file} the loader picks for path's libraries (ldd, so RPATHs count)."""
    out = run("ldd", path)
    found = {os.path.basename(f): f for f in re.findall(r"^\s*(/\S+) \(", out, re.M)}  # the loader
    found.update(re.findall(r"^\s*(\S+) => (/\S+)", out, re.M))
    return {name: os.path.normpath(f) for name, f in found.items()}


def owner(path):
    """The Debian package that installed path (or the file it links to), or None."""
    for candidate in (path, os.path.realpath(path)):
        r = subprocess.run(["dpkg", "-S", candidate], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                           text=True)
        if r.returncode == 0:
            return r.stdout.split(":")[0].split(",")[0].strip()
    return None


work = tempfile.mkdtemp(prefix="hvd-debs.")
try:
    subprocess.run(["cpack", "-G", "DEB", "-B", work, "--config", os.path.join(build, "CPackConfig.cmake")],
                   check=True, stdout=subprocess.DEVNULL)
    debs = {field(d, "Package"): d for d in glob.glob(os.path.join(work, "*.deb"))}
    print("packages: " + ", ".join(sorted(debs)))
    version = field(debs["libhvd1"], "Version")
    expected = {"libhvd1", "libhvd-dev", "hvd-tools"}
    if os.path.isdir(os.path.join(build, "python", "hvd")):
        expected.add("python3-hvd")
    if os.path.isdir(os.path.join(build, "python", "horovod")):
        expected.add("python3-hvd-horovod-compat")
    if os.path.isfile(os.path.join(build, "java", "hvd.jar")):
        expected.add("libhvd-java")
    check(set(debs) == expected, "packages %s, expected %s" % (sorted(debs), sorted(expected)))

    # Unpack every package into one root, remembering who holds what.
    root = os.path.join(work, "root")
    files = {}
    for pkg, deb in debs.items():
        for line in run("dpkg-deb", "-c", deb).splitlines():
            path = line.split()[5].lstrip(".")
            if not path.endswith("/"):
                check(path not in files, "%s is in both %s and %s" % (path, files.get(path), pkg))
                files[path] = pkg
        run("dpkg-deb", "-x", deb, root)
    usr = os.path.join(root, "usr")
    lib = os.path.join(usr, libdir)

    def has(pkg, rel, link_to=None):
        path = "/usr/" + rel
        check(files.get(path) == pkg, "%s is not in %s (found in %s)" % (path, pkg, files.get(path)))
        if link_to is not None:
            full = os.path.join(root, path.lstrip("/"))
            check(os.path.islink(full) and os.readlink(full) == link_to,
                  "%s should be a link to %s" % (path, link_to))

    has("libhvd1", libdir + "/libhvd.so." + version.split(".")[0],
        link_to="libhvd.so." + version.split("-")[0])
    has("libhvd-dev", libdir + "/libhvd.so", link_to="libhvd.so." + version.split(".")[0])
    lib_control = os.path.join(work, "libhvd1.control")
    run("dpkg-deb", "-e", debs["libhvd1"], lib_control)
    with open(os.path.join(lib_control, "shlibs")) as f:
        check(f.read().split() == ["libhvd", version.split(".")[0], "libhvd1", "(>=", version + ")"],
              "libhvd1's shlibs file is wrong")
    postinst = os.path.join(lib_control, "postinst")
    check(os.path.isfile(postinst) and "ldconfig" in open(postinst).read(), "libhvd1 does not run ldconfig")
    for rel in ("include/hvd/hvd.h", "include/hvd/torch.hpp", libdir + "/cmake/hvd/hvdConfig.cmake",
                libdir + "/cmake/hvd/hvdConfigVersion.cmake", libdir + "/cmake/hvd/hvdTargets.cmake",
                libdir + "/pkgconfig/hvd.pc", "share/hvd/hvd.cdef", "share/julia/Hvd/Project.toml",
                "share/julia/Hvd/src/Hvd.jl", "share/julia/Hvd/src/LibHvd.jl", "share/julia/Hvd/deps/libhvd_dir"):
        has("libhvd-dev", rel)
    for rel in ("bin/hvdrun", "bin/hvd_timeline"):
        has("hvd-tools", rel)
        check(os.access(os.path.join(usr, rel), os.X_OK), "/usr/%s is not executable" % rel)
    if "python3-hvd" in debs:
        pkgdir = "lib/python3/dist-packages/hvd"
        sources = os.path.join(src, "bindings", "python", "hvd")
        for d, _, names in os.walk(sources):
            for n in names:
                if n.endswith(".py"):
                    has("python3-hvd", os.path.join(pkgdir, os.path.relpath(os.path.join(d, n), sources)))
        for rel in ("hvd_c.py", "hvd.cdef"):
            has("python3-hvd", pkgdir + "/" + rel)
        for ext in ("_hvd_c", "_hvd_fast"):
            check(glob.glob(os.path.join(usr, pkgdir, ext + "*.so")), "python3-hvd has no %s extension" % ext)
        check(not glob.glob(os.path.join(usr, pkgdir, "libhvd*")), "python3-hvd carries its own libhvd")
        check(glob.glob(os.path.join(usr, "lib/python3/dist-packages/hvd-*.dist-info/METADATA")),
              "python3-hvd has no dist-info")
        scripts = os.path.join(work, "python3-hvd.control")
        run("dpkg-deb", "-e", debs["python3-hvd"], scripts)
        for script, tool in (("postinst", "py3compile -p python3-hvd"), ("prerm", "py3clean -p python3-hvd")):
            path = os.path.join(scripts, script)
            check(os.path.isfile(path) and os.access(path, os.X_OK) and tool in open(path).read(),
                  "python3-hvd's %s does not run %s" % (script, tool))
    if "libhvd-java" in debs:
        has("libhvd-java", "share/java/hvd.jar")
        has("libhvd-java", libdir + "/libhvd_jni.so")

    # hvd.pc in /usr: no RPATH (the loader's own folder).
    with open(os.path.join(lib, "pkgconfig", "hvd.pc")) as f:
        check("rpath" not in f.read(), "/usr's hvd.pc adds an RPATH")

    # Depends against what the binaries need.
    control = {pkg: field(deb, "Depends") for pkg, deb in debs.items()}
    for pkg, deps in sorted(control.items()):
        print("%s Depends: %s" % (pkg, deps))
        check("cuda" not in deps.lower() and "nccl" not in deps.lower(),
              "%s depends on a CUDA package" % pkg)
    check("libhvd1 (= %s)" % version in control["libhvd-dev"], "libhvd-dev must depend on libhvd1 (= version)")
    check("libdlpack-dev" in depends_names(control["libhvd-dev"]), "libhvd-dev must depend on libdlpack-dev")
    check("python3" in depends_names(control["hvd-tools"]), "hvd-tools (hvd_timeline) must depend on python3")
    if "python3-hvd" in debs:
        check({"python3", "python3-numpy", "libhvd1"} <= depends_names(control["python3-hvd"]),
              "python3-hvd must depend on python3, python3-numpy and libhvd1")
    if "libhvd-java" in debs:
        check("default-jre-headless" in depends_names(control["libhvd-java"]),
              "libhvd-java must depend on a Java runtime")

    for path, pkg in sorted(files.items()):
        full = os.path.join(root, path.lstrip("/"))
        if os.path.islink(full) or not os.path.isfile(full) or not is_elf(full):
            continue
        needed, runpath = elf_info(full)
        where = resolved(full)
        deps = depends_names(control[pkg])
        for entry in runpath:
            check(entry.startswith("$ORIGIN"), "%s has an absolute RPATH entry %s" % (path, entry))
        for so in needed:
            if so.startswith("libhvd.so"):
                check("libhvd1" in deps, "%s needs %s but %s does not depend on libhvd1" % (path, so, pkg))
                check(where.get(so, "").startswith(lib + "/"),
                      "%s: its RPATH does not lead to the unpacked %s (ldd: %s)" % (path, so, where.get(so)))
                continue
            package = owner(where[so]) if so in where else None
            if package is None:
                cuda = re.match(r"lib(cudart|nccl|cuda)\b", so)
                check(with_cuda and cuda, "%s needs %s, which no Debian package provides" % (path, so))
            else:
                check(package in deps, "%s needs %s (package %s), missing from %s's Depends" % (path, so, package, pkg))

    # The unpacked Python package loads the unpacked libhvd through its RPATH.
    if "python3-hvd" in debs:
        out = run("env", "-i", "PATH=/usr/bin:/bin", "PYTHONPATH=" + os.path.join(usr, "lib/python3/dist-packages"),
                  "/usr/bin/python3", "-c", "import hvd; print(hvd.library_path())")
        check(out.strip().startswith(lib + "/libhvd.so"), "unpacked hvd loaded %s" % out.strip())

    # A bare machine: apt with an empty dpkg status resolves every dependency.
    if subprocess.run(["apt-cache", "show", "libc6"], stdout=subprocess.DEVNULL,
                      stderr=subprocess.DEVNULL).returncode != 0:
        check(False, "apt has no package lists (run apt-get update): cannot check the Depends")
    else:
        status = os.path.join(work, "status")
        open(status, "w").close()
        r = subprocess.run(["apt-get", "install", "-s", "--no-install-recommends", "-o",
                            "Dir::State::status=" + status] + sorted(debs.values()),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        installs = re.findall(r"^Inst (\S+)", r.stdout, re.M)
        check(r.returncode == 0 and set(debs) <= set(installs),
              "apt cannot install the packages on a bare machine:\n" + r.stdout[-3000:])
        print("apt on a bare machine: %d packages to install, hvd's included" % len(installs))
finally:
    shutil.rmtree(work, ignore_errors=True)

if failures:
    sys.exit("%d check(s) failed" % len(failures))
print("the .deb files are complete")
