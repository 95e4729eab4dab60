from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from logdoctor.errors import FormatError, TruncatedError, UnsupportedError
from logdoctor.formats import quorum_state as qs
from logdoctor.formats.quorum_state import QuorumState

V0 = b'{"clusterId":"","leaderId":1,"leaderEpoch":190,"votedId":-1,"appliedOffset":0,"currentVoters":[{"voterId":1},{"voterId":2},{"voterId":3}],"data_version":0}'  # noqa: E501
# The v1 example of FileQuorumStateStore's javadoc, in Jackson's compact form
V1 = b'{"leaderId":-1,"leaderEpoch":2,"votedId":1,"votedDirectoryId":"J8aAPcfLQt2bqs1JT_rMgQ","data_version":1}'  # noqa: E501


def test_v0_and_v1():
    s0 = qs.parse_quorum_state(V0)
    assert (s0.leader_id, s0.leader_epoch, s0.voted_id, s0.current_voters) == (1, 190, -1, [1, 2, 3])
    assert qs.write_quorum_state(s0) == V0
    s1 = qs.parse_quorum_state(V1)
    assert (s1.data_version, s1.voted_id, s1.cluster_id) == (1, 1, None)
    assert s1.voted_directory_id == "J8aAPcfLQt2bqs1JT_rMgQ"
    assert qs.write_quorum_state(s1) == V1


def test_null_voters_and_only_first_line_read():
    data = b'{"clusterId":"c","leaderId":-1,"leaderEpoch":0,"votedId":-1,"appliedOffset":5,"currentVoters":null,"data_version":0}\nignored'  # noqa: E501
    state = qs.parse_quorum_state(data)
    assert state.current_voters is None and state.trailing == b"\nignored"
    assert qs.write_quorum_state(state) == data


@given(
    st.integers(-1, 2**31 - 1),
    st.integers(-1, 2**31 - 1),
    st.integers(-1, 2**31 - 1),
    st.text(max_size=20),
    st.integers(0, 2**63 - 1),
    st.none() | st.lists(st.integers(0, 2**31 - 1), max_size=5),
)
def test_v0_round_trip_and_json_equivalence(leader, epoch, voted, cluster, applied, voters):
    state = QuorumState(0, leader, epoch, voted, cluster, applied, voters)
    data = qs.write_quorum_state(state)
    assert qs.parse_quorum_state(data) == state
    # an independent JSON reader sees the same document, keys in schema order, data_version last
    obj = json.loads(data)
    assert list(obj) == [
        "clusterId",
        "leaderId",
        "leaderEpoch",
        "votedId",
        "appliedOffset",
        "currentVoters",
        "data_version",
    ]
    # no whitespace outside the clusterId string (whatever its escapes: every quote inside it is
    # escaped, so the first `","leaderId"` after its opening quote is its end)
    start = data.index(b'"clusterId":"') + len(b'"clusterId":"')
    end = data.index(b'","leaderId"', start)
    assert obj["clusterId"] == cluster and b" " not in data[:start] + data[end:]


def test_jackson_escapes_control_characters_upper_case():
    assert qs.jackson_string('a"\\\n\x01é') == '"a\\"\\\\\\n\\u0001é"'


def test_errors():
    with pytest.raises(TruncatedError):
        qs.parse_quorum_state(b"", source="quorum-state")
    with pytest.raises(UnsupportedError):
        qs.parse_quorum_state(b'{"leaderId":1,"data_version":2}')
    with pytest.raises(FormatError) as err:
        qs.parse_quorum_state(b'{"leaderId":1,', source="q")
    assert err.value.source == "q" and err.value.position == 14
    with pytest.raises(FormatError):
        # v1 without votedDirectoryId
        qs.parse_quorum_state(b'{"leaderId":1,"leaderEpoch":1,"votedId":-1,"data_version":1}')
    with pytest.raises(FormatError):
        qs.parse_quorum_state(b"[1]")


@given(st.binary(max_size=120))
def test_arbitrary_bytes_typed(data):
    try:
        qs.parse_quorum_state(data, source="q")
    except FormatError as exc:
        assert exc.source == "q" and exc.position is not None and 0 <= exc.position <= len(data)
