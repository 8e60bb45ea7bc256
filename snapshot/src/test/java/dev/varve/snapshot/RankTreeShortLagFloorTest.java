package dev.varve.snapshot;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.TreeMap;

import static dev.varve.snapshot.RankTreeReplays.declare;
import static dev.varve.snapshot.RankTreeReplays.recorded;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

/**
 * The floor a checkpoint mark records for a declaration counted later than its own time by less than
 * {@link PolicyClock#FLOOR_TOLERANCE_MILLIS}. Only a clock read that found the step back once made such a lag worth a
 * floor; replay reads no clock, and a live mark can come before the read that finds the step. Without the floor the
 * next recovery counted the snapshot at its own, earlier time, and capped the ones before it at that: one the live run
 * and the first replay kept was dropped before the raise logged later, an acknowledged raise lost.
 */
class RankTreeShortLagFloorTest {
    private static final RankTreePolicy POLICY = RankTreePolicy.levels(Retention.keepFor(Duration.ofMillis(2_000)), Retention.keepAll());
    private static final long T = Duration.ofDays(20_000).toMillis();
    /** A declared after the wall clock stepped back 800 ms (under the tolerance), then B and C; A is raised after C. */
    private static final SnapshotRecord A = new SnapshotRecord(1, 1, T - 800, 0, 1);
    private static final SnapshotRecord B = new SnapshotRecord(2, 1, T + 100, 0, 2);
    private static final SnapshotRecord C = new SnapshotRecord(3, 1, T + 1_300, 0, 3);

    /** The live run up to the first read: the archiver read T. */
    private static RankTree run() {
        RankTree run = new RankTree(POLICY);
        run.reset(List.of(), PolicyClock.NONE, 0);
        run.drops(id -> null, T, true);
        return run;
    }

    /** Replays C's declaration from {@code mark}, which covers {@code atMark}: A must still be live for its raise. */
    private static void assertReplayKeepsA(PolicyClock mark, TreeMap<Long, SnapshotRecord> atMark, String replay) {
        RankTree tree = new RankTree(POLICY);
        tree.reset(atMark.values(), mark, T + 6_000);
        List<Long> dropped = declare(tree, atMark, C);
        assertNotNull(atMark.get(A.id()), replay + " dropped " + dropped + " at C's declaration, before A's acknowledged raise is replayed");
    }

    @Test
    void aMarkTakenDuringReplayRecordsTheFloorOfAShortLag() {
        // the live run: the archiver read T, a checkpoint marked at T, then A, B, C and the raise of A (acknowledged)
        TreeMap<Long, SnapshotRecord> live = new TreeMap<>();
        RankTree run = run();
        PolicyClock m0 = recorded(run.clock(live::get, T));
        assertEquals(List.of(), declare(run, live, A));
        assertEquals(List.of(), declare(run, live, B));
        assertEquals(List.of(), declare(run, live, C), "live: A counts as declared at T, 1,300 ms old at C");

        // replay #1 from M0 decides as the live run did; it takes a mark after B (the data region ran short)
        TreeMap<Long, SnapshotRecord> first = new TreeMap<>();
        RankTree replay1 = new RankTree(POLICY);
        replay1.reset(first.values(), m0, T + 5_000);
        declare(replay1, first, A);
        declare(replay1, first, B);
        PolicyClock m1 = recorded(replay1.clockAsRead(first::get));
        TreeMap<Long, SnapshotRecord> atM1 = new TreeMap<>(first);
        assertEquals(List.of(), declare(replay1, first, C), "replay #1 keeps A for its raise");

        assertReplayKeepsA(m1, atM1, "replay #2, after a second crash,");
    }

    @Test
    void soDoesALiveMarkTakenBeforeAReadFoundTheStep() {
        TreeMap<Long, SnapshotRecord> live = new TreeMap<>();
        RankTree run = run();
        declare(run, live, A);
        declare(run, live, B);
        PolicyClock mark = recorded(run.clock(live::get, T + 150));
        TreeMap<Long, SnapshotRecord> atMark = new TreeMap<>(live);
        assertEquals(List.of(), declare(run, live, C), "live keeps A for its raise");

        assertReplayKeepsA(mark, atMark, "the replay");
    }
}
