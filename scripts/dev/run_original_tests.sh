#!/usr/bin/env bash
# Runs the public Python tests of PyMatching, ldpc and relay-bp against backline.decoders, with
# only their import lines changed (issue 44). Nothing of theirs is kept in this repository: the
# sources are obtained at run time into $WORK (default /tmp/backline-originals), copied, their
# import lines rewritten (the decoder classes from backline.decoders; ldpc's helpers such as
# ldpc.codes, when a test file imports them, stay ldpc's: `pip install ldpc==2.4.1` beside
# backline for those), and run with pytest from $WORK.
#
#   scripts/dev/run_original_tests.sh                 # all three
#   scripts/dev/run_original_tests.sh pymatching      # one (pymatching, ldpc, relay)
#
# Sources: git repositories, cloned from GitHub unless PYMATCHING_GIT / LDPC_GIT / RELAY_GIT name
# another (a URL or a local git directory, e.g. a mirror); refs PYMATCHING_REF (default: the
# default branch's head; PyMatching's sdists carry no tests), LDPC_REF (default: head, 2.4.1's
# source), RELAY_REF (default v0.2.2).
#
# Which tests are run: the test files that use the classes backline.decoders offers, minus the
# tests listed in DESELECT below, each with the reason (they use what a drop-in does not offer:
# networkx graphs, PyMatching's internal _cpp_pymatching, drawing, ldpc's other decoders...).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY=${PYTHON:-$ROOT/.venv-py/bin/python}
WORK=${WORK:-/tmp/backline-originals}
WHICH=${*:-pymatching ldpc relay}

obtain() { # name url ref subdirs...
    local name=$1 url=$2 ref=$3 dest=$WORK/$1
    shift 3
    rm -rf "$dest" && mkdir -p "$dest"
    if [ -d "$url" ]; then
        git --git-dir="$url" archive "${ref:-HEAD}" "$@" | tar -x -C "$dest"
    else
        local clone=$WORK/.clone-$name
        rm -rf "$clone"
        if [ -n "$ref" ]; then
            git clone -q --depth 1 --branch "$ref" "$url" "$clone"
        else
            git clone -q --depth 1 "$url" "$clone"
        fi
        for sub in "$@"; do cp -r "$clone/$sub" "$dest/"; done
        rm -rf "$clone"
    fi
}

rewrite() { # directory: rewrite the import lines of every .py under it
    "$PY" - "$1" <<'EOF'
import pathlib, re, sys

OFFERED = {"Matching", "BpDecoder", "BpOsdDecoder"}
root = pathlib.Path(sys.argv[1])
for f in root.rglob("*.py"):
    out = []
    for line in f.read_text().splitlines(keepends=True):
        s = line.rstrip("\n")
        m = re.match(r"^(\s*)from (pymatching|pymatching\.matching|ldpc|ldpc\.bp_decoder|ldpc\.bposd_decoder) import (.+)$", s)
        if m and "(" not in m.group(3):
            indent, mod, names = m.group(1), m.group(2), [n.strip() for n in m.group(3).split(",")]
            ours = [n for n in names if n in OFFERED]
            theirs = [n for n in names if n not in OFFERED]
            if ours:
                line = f"{indent}from backline.decoders import {', '.join(ours)}\n"
                if theirs:
                    line += f"{indent}from {mod} import {', '.join(theirs)}\n"
        elif re.match(r"^import pymatching\s*$", s):
            line = "import backline.decoders as pymatching\n"
        elif re.match(r"^import relay_bp\s*$", s):
            line = "import backline.decoders as relay_bp\n"
        elif "importorskip(\"relay_bp\"" in s:
            line = line.replace("importorskip(\"relay_bp\"", "importorskip(\"backline.decoders\"")
        out.append(line)
    f.write_text("".join(out))
EOF
}

run() { # name dir files... ; DESELECT_<name> holds node ids
    local name=$1 dir=$2
    shift 2
    local args=()
    local var="DESELECT_$name[@]"
    for t in "${!var}"; do args+=(--deselect "${t%% *}"); done
    echo "== $name: $* ($(( ${#args[@]} / 2 )) deselection prefixes)"
    (cd "$dir" && "$PY" -m pytest -q -p no:cacheprovider -o addopts="" "${args[@]}" "$@") || true
}

# Tests of the chosen files that use what backline.decoders does not offer: "node-id  reason".
DESELECT_pymatching=(
    "tests/matching/decode_test.py::test_decode_to_matched_detection_events  decode_to_matched_dets_array/_dict"
    "tests/matching/decode_test.py::test_negative_and_positive_in_matching  networkx graph"
    "tests/matching/decode_test.py::test_parallel_boundary_edges_decoding  set_boundary_nodes"
    "tests/matching/decode_test.py::test_syndrome_on_boundary_nodes  set_boundary_nodes"
    "tests/matching/edges_test.py::test_add_boundary_edge  merge_strategy='independent'"
    "tests/matching/edges_test.py::test_add_edge_merge_strategy  merge_strategy='independent'"
    "tests/matching/edges_test.py::test_get_edge_data  get_edge_data"
    "tests/matching/edges_test.py::test_has_edge  has_edge/has_boundary_edge"
    "tests/matching/load_from_check_matrix_test.py::test_error_probability_from_array  add_noise"
    "tests/matching/load_from_check_matrix_test.py::test_measurement_error_probabilities  repetitions > 1"
    "tests/matching/load_from_check_matrix_test.py::test_timelike_weights  repetitions > 1"
    "tests/matching/load_from_check_matrix_test.py::test_wrong_measurement_error_probabilities_raises_valueerror  repetitions > 1"
    "tests/matching/load_from_check_matrix_test.py::test_wrong_timelike_weights_raises_valueerror  repetitions > 1"
    "tests/matching/output_graph_test.py::test_matching_to_networkx  networkx graph"
    "tests/matching/output_graph_test.py::test_matching_to_rustworkx  rustworkx graph, get_edge_data"
    "tests/matching/output_graph_test.py::test_self_loop_to_networkx  networkx graph"
    "tests/matching/properties_test.py::test_set_boundary_nodes  set_boundary_nodes"
    "tests/matching/properties_test.py::test_set_min_num_fault_ids  networkx/rustworkx graph"
)
DESELECT_ldpc=(
    "python_test/test_bp_decoder.py::test_BpSparse_rep_code  ldpc's io_test only (no decoder)"
)
DESELECT_relay=(
)

mkdir -p "$WORK"
for which in $WHICH; do
    case $which in
    pymatching)
        obtain pymatching "${PYMATCHING_GIT:-https://github.com/oscarhiggott/PyMatching}" "${PYMATCHING_REF:-}" tests data
        rewrite "$WORK/pymatching"
        run pymatching "$WORK/pymatching" \
            tests/matching/decode_test.py tests/matching/edges_test.py \
            tests/matching/load_from_check_matrix_test.py tests/matching/load_from_stim_test.py \
            tests/matching/output_graph_test.py tests/matching/properties_test.py
        ;;
    ldpc)
        obtain ldpc "${LDPC_GIT:-https://github.com/quantumgizmos/ldpc}" "${LDPC_REF:-}" python_test
        rewrite "$WORK/ldpc"
        run ldpc "$WORK/ldpc" \
            python_test/test_bp_decoder.py python_test/test_bp_decoder_input.py \
            python_test/test_bp_serial.py
        ;;
    relay)
        obtain relay "${RELAY_GIT:-https://github.com/trmue/relay}" "${RELAY_REF:-v0.2.2}" tests
        rewrite "$WORK/relay"
        run relay "$WORK/relay" \
            tests/bp/test_min_sum.py tests/bp/test_min_sum_fixed.py tests/bp/test_relay_decoding.py \
            tests/test_observable_decoding.py
        ;;
    *) echo "unknown: $which (pymatching, ldpc, relay)" >&2; exit 2 ;;
    esac
done
