"""README's operator table (Compatibility with MongoDB 7.0 -> "Operators, stages, accumulators and window
functions") against MongoDB 7.0's lists and against the server's own tables.

- every MongoDB 7.0 stage, query/projection operator, expression operator, accumulator and window
  function (the lists below, from the MongoDB 7.0 manual: "Aggregation Stages", "Aggregation
  Operators", "Query and Projection Operators") has exactly one row;
- every name the server accepts (its tables) is listed as supported (or "differs");
- every name listed as supported is in the server's tables;
- every "not supported" row says why.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SECTION = "### Operators, stages, accumulators and window functions"
KINDS = {"Stages": "stages", "Query operators": "query", "Projection operators": "projection",
         "Expression operators": "expressions", "Accumulators": "accumulators", "Window functions": "windows"}


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


# MongoDB 7.0 (manual v7.0).
MONGODB_70: dict[str, frozenset[str]] = {
    # db.collection.aggregate() and db.aggregate() stages
    "stages": _names("""
        $addFields $bucket $bucketAuto $changeStream $changeStreamSplitLargeEvent $collStats $count $currentOp
        $densify $documents $facet $fill $geoNear $graphLookup $group $indexStats $limit $listLocalSessions
        $listSampledQueries $listSearchIndexes $listSessions $lookup $match $merge $out $planCacheStats
        $project $redact $replaceRoot $replaceWith $sample $search $searchMeta $set $setWindowFields
        $shardedDataDistribution $skip $sort $sortByCount $unionWith $unset $unwind $vectorSearch"""),
    # query selectors (comparison, logical, element, evaluation, geospatial incl. geometry specifiers,
    # array, bitwise) and the miscellaneous operators
    "query": _names("""
        $eq $gt $gte $in $lt $lte $ne $nin $and $not $nor $or $exists $type $expr $jsonSchema $mod $regex
        $text $where $geoIntersects $geoWithin $near $nearSphere $box $center $centerSphere $geometry
        $maxDistance $minDistance $polygon $all $elemMatch $size $bitsAllClear $bitsAllSet $bitsAnyClear
        $bitsAnySet $comment $rand $natural"""),
    "projection": _names("$ $elemMatch $meta $slice"),
    # expression operators (including the accumulators that also have an expression form)
    "expressions": _names("""
        $abs $acos $acosh $add $allElementsTrue $and $anyElementTrue $arrayElemAt $arrayToObject $asin $asinh
        $atan $atan2 $atanh $avg $binarySize $bitAnd $bitNot $bitOr $bitXor $bsonSize $ceil $cmp $concat
        $concatArrays $cond $convert $cos $cosh $dateAdd $dateDiff $dateFromParts $dateFromString
        $dateSubtract $dateToParts $dateToString $dateTrunc $dayOfMonth $dayOfWeek $dayOfYear
        $degreesToRadians $divide $eq $exp $filter $first $firstN $floor $function $getField $gt $gte $hour
        $ifNull $in $indexOfArray $indexOfBytes $indexOfCP $isArray $isNumber $isoDayOfWeek $isoWeek
        $isoWeekYear $last $lastN $let $literal $ln $log $log10 $lt $lte $ltrim $map $max $maxN $median
        $mergeObjects $meta $min $minN $millisecond $minute $mod $month $multiply $ne $not $objectToArray $or
        $percentile $pow $radiansToDegrees $rand $range $reduce $regexFind $regexFindAll $regexMatch
        $replaceAll $replaceOne $reverseArray $round $rtrim $sampleRate $second $setDifference $setEquals
        $setField $setIntersection $setIsSubset $setUnion $sin $sinh $size $slice $sortArray $split $sqrt
        $stdDevPop $stdDevSamp $strcasecmp $strLenBytes $strLenCP $substr $substrBytes $substrCP $subtract
        $sum $switch $tan $tanh $toBool $toDate $toDecimal $toDouble $toHashedIndexKey $toInt $toLong
        $toLower $toObjectId $toString $toUpper $trim $trunc $tsIncrement $tsSecond $type $unsetField $week
        $year $zip"""),
    # $group (and $bucket, $bucketAuto) accumulators
    "accumulators": _names("""
        $accumulator $addToSet $avg $bottom $bottomN $count $first $firstN $last $lastN $max $maxN $median
        $mergeObjects $min $minN $percentile $push $stdDevPop $stdDevSamp $sum $top $topN"""),
    # $setWindowFields window operators
    "windows": _names("""
        $addToSet $avg $bottom $bottomN $count $covariancePop $covarianceSamp $denseRank $derivative
        $documentNumber $expMovingAvg $first $firstN $integral $last $lastN $linearFill $locf $max $maxN
        $median $min $minN $percentile $push $rank $shift $stdDevPop $stdDevSamp $sum $top $topN"""),
}


def server_tables() -> dict[str, frozenset[str]]:
    """What the server accepts, from its own tables."""
    from tidemark.commands import replication
    from tidemark.query import accumulators, expressions, match_parse, pipeline, plan, project, windows

    stages = set(pipeline.STAGES or pipeline._stage_table())
    stages = {s for s in stages if not s.startswith("$_")}  # internal stages ($_internalGeoNearDistance)
    assert "$listLocalSessions" in inspect.getsource(replication)  # answered by the aggregate command
    stages.add("$listLocalSessions")
    query = set(match_parse.QUERY_OPERATORS)
    assert "$rand" in expressions.OPERATORS  # the query operator $rand is the expression, in $expr
    assert '"$natural"' in inspect.getsource(plan)  # a sort and hint key
    query |= {"$rand", "$natural"}
    return {
        "stages": frozenset(stages),
        "query": frozenset(query),
        "projection": frozenset(project.PROJECTION_OPERATORS),
        "expressions": frozenset(expressions.OPERATORS) | expressions.SPECIAL_OPERATORS,
        "accumulators": frozenset(accumulators.ACCUMULATORS),
        "windows": frozenset(windows.WINDOW_FUNCTIONS),
    }


def readme_table() -> dict[str, dict[str, tuple[str, str]]]:
    """kind -> name -> (status, notes), parsed from the README section."""
    text = (ROOT / "README.md").read_text()
    start = text.index(SECTION)
    end = text.find("\n## ", start)
    out: dict[str, dict[str, tuple[str, str]]] = {}
    kind = None
    for line in text[start:end if end != -1 else None].splitlines():
        heading = re.match(r"#### (.+?)( \(.*\))?$", line)
        if heading:
            kind = KINDS[heading.group(1)]
            out.setdefault(kind, {})
            continue
        row = re.match(r"\| `([^`]+)` \| ([^|]+) \|(.*)\|$", line)
        if row and kind:
            name, status, notes = row.group(1), row.group(2).strip(), row.group(3).strip()
            assert name not in out[kind], f"{name} listed twice under {kind}"
            out[kind][name] = (status, notes)
    return out


def test_every_mongodb_7_0_operator_is_listed():
    table = readme_table()
    assert set(table) == set(MONGODB_70)
    for kind, names in MONGODB_70.items():
        missing = sorted(names - set(table[kind]))
        assert not missing, f"{kind}: not in README's table: {missing}"


def test_statuses_are_known_and_refusals_say_why():
    for kind, rows in readme_table().items():
        for name, (status, notes) in rows.items():
            assert status in ("supported", "differs", "not supported"), (kind, name, status)
            if status != "supported":
                assert notes, f"{kind} {name}: '{status}' needs a reason"


def test_the_table_matches_the_server():
    table = readme_table()
    server = server_tables()
    for kind, rows in table.items():
        listed = {n for n, (status, _) in rows.items() if status != "not supported"}
        unlisted = sorted(server[kind] - listed)
        assert not unlisted, f"{kind}: the server accepts {unlisted}, README's table does not say so"
        phantom = sorted(listed - server[kind])
        assert not phantom, f"{kind}: README's table says {phantom} are supported, the server has no such entry"
