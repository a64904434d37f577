#!/usr/bin/env python3
"""Every function Doxygen found in hvd.h has a description (brief or
detailed), and every hvd_* function of the header is one Doxygen found.
Usage: check_c_api_xml.py DOXYGEN_XML_DIR HEADER"""
import re
import sys
import xml.etree.ElementTree as ET


def text(e):
    return "".join(e.itertext()).strip() if e is not None else ""


def main(xml_dir, header):
    root = ET.parse(xml_dir + "/hvd_8h.xml").getroot()
    documented, bare = set(), []
    for m in root.iter("memberdef"):
        if m.get("kind") != "function":
            continue
        name = m.findtext("name")
        if text(m.find("briefdescription")) or text(m.find("detaileddescription")):
            documented.add(name)
        else:
            bare.append(name)
    with open(header, encoding="utf-8") as f:
        declared = set(re.findall(r"^HVD_API\b[^(]*?\b(hvd_\w+)\s*\(", f.read(), re.M))
    problems = ["%s: no description in %s" % (n, header) for n in sorted(bare)]
    problems += ["%s: declared but not in Doxygen's output" % n
                 for n in sorted(declared - documented - set(bare))]
    for p in problems:
        print("check_c_api_xml: " + p)
    print("check_c_api_xml: %d functions, %d documented" % (len(declared), len(documented)))
    return 1 if problems or not declared else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
