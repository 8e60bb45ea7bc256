package dev.varve.snapshot;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.memory.PageMemory;
import dev.varve.core.store.PageStore;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A rank record is appended only while its snapshot is live, so replay keeps every snapshot that a later record of the
 * WAL raises until that raise is replayed ({@link RaisesAhead}), whatever the policy's clock it goes on from decides
 * before. The review's first finding: a live checkpoint mark records the policy's clock at the mark's time, later than
 * the archiver's last check; with a correction on that clock (a step back found earlier), or a step back right after
 * the mark, replayed declarations checked keepFor by it and dropped X, aged out between that check and the mark, before
 * its raise, acknowledged after the mark, was replayed.
 */
@Timeout(120)
class RaisesAheadReplayTest {
    /** Level 1 keeps a snapshot 2 s; level 2 keeps everything. */
    private static final RankTreePolicy POLICY = RankTreePolicy.levels(Retention.keepFor(Duration.ofMillis(2_000)), Retention.keepAll());
    private static final long T = Duration.ofDays(20_000).toMillis();
    private static final long MARK = 10;
    private static final long X = 1;
    private static final long Y = 2;

    @TempDir
    Path dir;

    private final AtomicLong wall = new AtomicLong(T);
    private final FileIOFactory io = FileIOFactory.standard();

    private SnapshotArchive open() {
        return SteppedClockArchives.open(dir.resolve("archive"), POLICY, wall::get);
    }

    /**
     * The live run: the clock stepped back 500 ms before X when {@code corrected}, X (rank 1) declared at T + 100, the
     * archiver's check at T + 2,050 (X kept), a checkpoint mark at T + 2,500, Y declared at {@code yAt} and X raised to
     * rank 2 at {@code raiseAt}, both kept; a crash. Then the reopen replays from the mark with the raises ahead that
     * the WAL holds ({@code raisesAhead}); returns the archive, replay over.
     */
    private SnapshotArchive crashAndReplay(boolean corrected, long yAt, long raiseAt, long[] raisesAhead) {
        PageMemory memory = new PageMemory(new PageStore(io, dir.resolve("pages"), 4096), 16L << 20, 1L << 20);
        try (SnapshotArchive a = open()) {
            a.attach(memory);
            a.recover(0, true);
            a.enforce();
            if (corrected) {
                wall.set(T - 500);
                a.enforce();
            }
            wall.set(T + 100);
            a.declare(X, 1, T + 100, 1);
            wall.set(T + 2_050);
            a.enforce();
            assertNotNull(a.find(X), "the archiver's check keeps X");
            wall.set(T + 2_500);
            SteppedClockArchives.mark(a, MARK);
            wall.set(yAt);
            a.declare(Y, 1, yAt, MARK + 1);
            assertNotNull(a.find(X), "live: Y's declaration keeps X");
            wall.set(raiseAt);
            assertEquals(MARK + 2, a.rank(X, 2, () -> MARK + 2), "live: X's raise is logged and acknowledged");
        } // no checkpoint after it: the process dies
        SnapshotArchive a = open();
        wall.set(T + 5_000);
        a.replaying(raisesAhead);
        a.recover(MARK, false);
        a.declare(Y, 1, yAt, MARK + 1);
        assertNotNull(a.find(X), "replayed Y's declaration dropped X before its acknowledged raise was replayed");
        assertTrue(a.rank(X, 2, MARK + 2), "the raise is replayed");
        a.replayed();
        return a;
    }

    @Test
    void aRaiseAcknowledgedAfterALiveMarkSurvivesTheReplayOnACorrectedClock() {
        try (SnapshotArchive a = crashAndReplay(true, T + 2_510, T + 2_520, new long[]{X})) {
            assertEquals(2, a.find(X).rank(), "X is kept at level 2 for good, as the live run left it");
            assertNull(a.find(Y), "Y aged out at level 1 by the reopen's clock");
        }
    }

    @Test
    void soDoesOneWhenTheClockStepsBackRightAfterTheMark() {
        try (SnapshotArchive a = crashAndReplay(false, T + 2_010, T + 2_020, new long[]{X})) {
            assertEquals(2, a.find(X).rank());
        }
    }

    /** Two raises of X ahead: the first one replayed does not yet let the policy drop X; the last one decides. */
    @Test
    void eachReplayedRaiseCountsOneDown() {
        try (SnapshotRegistry r = new SnapshotRegistry(io, dir, RankTreePolicy.levels(Retention.keepLast(1), Retention.keepLast(1),
                Retention.keepAll()), 64)) {
            r.prepare(0, true, ArchiveMarks.Mark.none(3));
            r.cut();
            r.raisesAhead(new long[]{X, X});
            r.declare(X, 1, T, 1, level -> 0);
            r.declare(Y, 1, T + 1, 2, level -> 0);
            assertNotNull(r.find(X), "keepLast(1) would drop X at Y's declaration: two raises of it are ahead");
            assertTrue(r.rank(X, 1, 3, new long[3], false), "a raise that keeps its rank");
            r.declare(3, 1, T + 2, 4, level -> 0);
            assertNotNull(r.find(X), "one raise of X is still ahead");
            assertTrue(r.rank(X, 2, 5, new long[3], false));
            assertNotNull(r.find(X), "its last raise: level 2 keeps X, the latest there");
            assertEquals(List.of(X, 3L), r.live().stream().map(SnapshotRecord::id).toList(), "Y left level 1's window at 3");
        }
    }

    /** The budget passes over a snapshot whose raise is ahead and drops the next in its order, as the live run had to. */
    @Test
    void theBudgetSkipsASnapshotWithARaiseAhead() {
        try (SnapshotRegistry r = new SnapshotRegistry(io, dir, RankTreePolicy.levels(Retention.keepAll()), 64)) {
            r.prepare(0, true, ArchiveMarks.Mark.none(1));
            r.cut();
            for (long id = 1; id <= 4; id++) r.declare(id, 1, T + id, id, level -> 0);
            r.raisesAhead(new long[]{1});
            assertEquals(100, r.dropForBudget(50, 1_000, id -> 100, 5));
            assertEquals(List.of(1L, 3L, 4L), r.live().stream().map(SnapshotRecord::id).toList());
            r.raisesAhead(new long[0]); // replay is over
            assertEquals(100, r.dropForBudget(50, 1_000, id -> 100, 6));
            assertEquals(List.of(3L, 4L), r.live().stream().map(SnapshotRecord::id).toList());
        }
    }
}
