"""Measured evidence: profile a workload of the analysed package, and join what was measured to the findings.

    recorder     the profiler (sys.monitoring on 3.12+, sys.setprofile before), per function and call site
    fingerprint  cheap fingerprints of arguments and results, for repeated identical calls
    workload     running a script or module under the recorder; the profile from what it measured
    profile      the profile file (typed records, JSON)
    evidence     what to measure (from the analysis), and the findings ranked by what was measured

It sits above the rules (it reads an analysis and findings) and below the
API; nothing below imports it.
"""
