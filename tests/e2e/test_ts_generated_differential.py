"""Generated differential test (issue 25.0): the same random measurements in a regular collection and
in time-series collections (metaField ``m``, and none) answer 1,000 generated aggregation pipelines and
finds identically (``harness.pipeline_grammar``: stages, expressions, accumulators, window functions,
filters; ``harness.ts_differential``: how answers compare). A failure prints the seed, the case and
both answers; ``python -m bench.differential --cases 20000 --seed N`` runs more of them."""

import random

import pytest
from harness import pipeline_grammar, ts_differential

pytestmark = pytest.mark.commands("aggregate", "find", "insert", "create")

SEED = 2025
CASES = 1000
DOCUMENTS = 80  # (the benchmark loads 150 by default)


@pytest.fixture(scope="module")
def database(client):
    db = client["ts_generated_differential"]
    ts_differential.load(db, pipeline_grammar.documents(random.Random(SEED), DOCUMENTS))
    yield db
    client.drop_database("ts_generated_differential")


@pytest.mark.slow
def test_generated_queries_answer_as_on_a_regular_collection(database):
    grammar = pipeline_grammar.Grammar(random.Random(SEED))
    differences, errors, nonempty = [], 0, 0
    for i in range(CASES):
        case = grammar.case()
        expected = ts_differential.run(database["reg"], case)
        errors += expected[0] == "error"
        nonempty += expected[0] == "ok" and bool(expected[1])
        name = ts_differential.TIME_SERIES[i % 2]  # each case on one of the two time-series collections
        message = ts_differential.check(database, case, name, expected)
        if message:
            differences.append(f"seed {SEED}, case {i}: {message}")
    assert not differences, f"{len(differences)} of {CASES} cases differ:\n\n" + "\n\n".join(differences[:3])
    # the cases mean something: most run, and most find documents
    assert errors < CASES * 0.15 and nonempty > CASES * 0.6, (errors, nonempty)
