#!/usr/bin/env python3
"""Validates a JUnit XML file as CI servers read it (tests/cli/junit_cli_test.cpp runs this).

Checks: it parses (xml.etree); the root is <testsuites>; every <testsuite> has name, tests, failures,
errors, skipped and time, and its counts equal its <testcase> children; every <testcase> has
classname, name and time, and at most one child among failure, error and skipped. Prints the cases as
JSON ([{"classname", "name", "result", "message", "text"}]) and exits 0; any violation exits 1 with a
message.
"""
import json
import sys
import xml.etree.ElementTree as ET


def fail(message):
    print("invalid JUnit: " + message, file=sys.stderr)
    sys.exit(1)


def main(path):
    root = ET.parse(path).getroot()
    if root.tag != "testsuites":
        fail("root is <%s>, not <testsuites>" % root.tag)
    cases = []
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for suite in root:
        if suite.tag != "testsuite":
            fail("<%s> under <testsuites>" % suite.tag)
        for attr in ("name", "tests", "failures", "errors", "skipped", "time"):
            if attr not in suite.attrib:
                fail("testsuite without %s" % attr)
        float(suite.attrib["time"])
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        for case in suite:
            if case.tag != "testcase":
                fail("<%s> under <testsuite>" % case.tag)
            for attr in ("classname", "name", "time"):
                if attr not in case.attrib:
                    fail("testcase without %s" % attr)
            float(case.attrib["time"])
            results = [c for c in case if c.tag in ("failure", "error", "skipped")]
            if len(results) > 1:
                fail("testcase %s has %d results" % (case.attrib["name"], len(results)))
            result = results[0].tag if results else "pass"
            counts["tests"] += 1
            if result == "failure":
                counts["failures"] += 1
            elif result == "error":
                counts["errors"] += 1
            elif result == "skipped":
                counts["skipped"] += 1
            cases.append({
                "classname": case.attrib["classname"],
                "name": case.attrib["name"],
                "result": result,
                "message": results[0].attrib.get("message", "") if results else "",
                "text": (results[0].text or "") if results else "",
            })
        for key, value in counts.items():
            if int(suite.attrib[key]) != value:
                fail("testsuite %s says %s=%s, has %d" % (suite.attrib["name"], key, suite.attrib[key], value))
            totals[key] += value
    for key, value in totals.items():
        if key in root.attrib and int(root.attrib[key]) != value:
            fail("testsuites says %s=%s, has %d" % (key, root.attrib[key], value))
    print(json.dumps(cases))


if __name__ == "__main__":
    main(sys.argv[1])
