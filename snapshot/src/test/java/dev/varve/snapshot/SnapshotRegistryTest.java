package dev.varve.snapshot;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import dev.varve.core.io.FileIOFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Drops beyond the in-memory window are still explained, from the drop log; live ones and unknown ids are not; and
 * the declarations held in memory follow the live snapshots, not every snapshot ever declared; a replay whose
 * declarations were timed by a clock since set back drops nothing early.
 */
@Timeout(180)
class SnapshotRegistryTest {
    @TempDir
    Path dir;

    @Test
    void oldDropsAreFoundInTheDropLog() {
        try (SnapshotRegistry r = new SnapshotRegistry(FileIOFactory.standard(), dir, RankTreePolicy.levels(Retention.keepLast(2)), 64)) {
            r.prepare(0, true, ArchiveMarks.Mark.none(1));
            r.cut();
            for (long id = 1; id <= 6000; id++) r.declare(id, 1, 1000 + id, id, level -> 0);
            assertEquals(2, r.live().size());
            DroppedSnapshot first = r.drops().dropped(1); // dropped 5,997 drops ago: no longer in memory
            assertNotNull(first, "snapshot 1 was dropped and says so");
            assertTrue(first.why().contains("rank 1"), first.why());
            assertNotNull(r.drops().dropped(5998), "a recent drop");
            assertNull(r.drops().dropped(6000), "a live snapshot is not dropped");
            assertNull(r.drops().dropped(6001), "a snapshot never declared is not dropped");
            assertTrue(r.remembered() <= 3 * 2, "declarations kept in memory follow the live ones, not the 6,000 declared: " + r.remembered());
        }
    }

    /**
     * A snapshot kept for good (rank 2 under keepLast(2), keepAll()) does not keep in memory the declaration of every
     * snapshot declared after it: the dropped ones are forgotten wherever they lie.
     */
    @Test
    void declarationsFollowTheLiveSnapshotsBehindOneKeptForGood() {
        try (SnapshotRegistry r = new SnapshotRegistry(FileIOFactory.standard(), dir, RankTreePolicy.levels(Retention.keepLast(2), Retention.keepAll()), 64)) {
            r.prepare(0, true, ArchiveMarks.Mark.none(2));
            r.cut();
            r.declare(1, 2, 1001, 1, level -> 0);
            for (long id = 2; id <= 6000; id++) r.declare(id, 1, 1000 + id, id, level -> 0);
            assertEquals(List.of(1L, 5999L, 6000L), r.live().stream().map(SnapshotRecord::id).toList());
            assertTrue(r.remembered() <= 3 * 3, "declarations kept in memory follow the 3 live ones, not the 6,000 declared: " + r.remembered());
            assertEquals(6000, r.latestAt(1));
            assertEquals(1, r.latestAt(2));
            assertEquals(5999, r.savedAfterAt(1, 5999));
            assertEquals(1, r.savedAfterAt(2, 5999));
        }
    }

    /**
     * Recovery replays declarations with the times they were written with. A RANK record was replayed with the clock of
     * now (the raise's check): after a restart that set a clock running a year ahead right, that check found the step
     * back, and the next replayed declaration, timed before it by the clock a year ahead, was counted the step ahead and
     * moved the policy's clock a year on, dropping every snapshot only keepFor kept, seconds after their declaration. A
     * replayed raise now reads no clock at all (nor drops, by today's clock, a snapshot whose raise is still to come).
     */
    @Test
    void aReplayedRaiseBetweenDeclarationsOfAClockSinceSetBackDropsNothingEarly() {
        RankTreePolicy policy = RankTreePolicy.levels(Retention.keepFor(Duration.ofMinutes(10)), Retention.keepAll());
        try (SnapshotRegistry r = new SnapshotRegistry(FileIOFactory.standard(), dir, policy, 64)) {
            r.prepare(0, true, ArchiveMarks.Mark.none(1));
            r.cut();
            long yearAhead = System.currentTimeMillis() + Duration.ofDays(365).toMillis(); // the clock the WAL was written by
            r.declare(1, 1, yearAhead, 1, level -> 0);
            r.declare(2, 1, yearAhead + 1_000, 2, level -> 0);
            assertTrue(r.rank(2, 2, 3, new long[2], false), "the replayed raise, which reads no clock");
            r.declare(3, 1, yearAhead + 2_000, 4, level -> 0);
            assertEquals(List.of(1L, 2L, 3L), r.live().stream().map(SnapshotRecord::id).toList(),
                    "snapshot 1, declared two seconds before the last, is kept");
        }
    }
}
