package dev.varve.snapshot;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import dev.varve.core.agent.Agents;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.memory.PageMemory;
import dev.varve.core.page.Page;
import dev.varve.core.page.PageId;
import dev.varve.core.store.PageStore;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A level's latest snapshot decides the snapshot a pre-state recorded there is mapped to, and stays the latest after
 * it is dropped (until a later one is counted there), so the level's Maplog is in snapshot order (I7). Recovery
 * rebuilds it from the snapshot log, which a compaction rewrites without the records of dropped snapshots: the one a
 * compaction let go must still bound what recovery takes as the level's latest, or the first capture after the reopen
 * is mapped to an older snapshot than the level's Maplog already holds.
 */
@Timeout(120)
class LevelLatestRecoveryTest {
    private static final long T0 = Duration.ofDays(20_000).toMillis();
    /** keepLast(1), keepFor(10 min), keepAll(): a rank-2 snapshot ages out of level 2 with no later one counted there. */
    private static final RankTreePolicy KEEP_FOR = RankTreePolicy.levels(Retention.keepLast(1), Retention.keepFor(Duration.ofMinutes(10)), Retention.keepAll());
    /** keepLast(1), keepLast(1), keepAll(): a rank-2 snapshot goes when the next one is counted at level 2. */
    private static final RankTreePolicy KEEP_LAST = RankTreePolicy.levels(Retention.keepLast(1), Retention.keepLast(1), Retention.keepAll());
    private static final long OLD_PAGE = PageId.of(1, 0);
    private static final long CHANGED_PAGE = PageId.of(1, 1);

    @TempDir
    Path dir;

    private final AtomicLong wall = new AtomicLong(T0);

    private SnapshotArchive open(Agents agents, PageMemory memory, RankTreePolicy policy) {
        SnapshotArchive a = new SnapshotArchive(FileIOFactory.standard(), ArchiveSettings.builder(dir.resolve("archive"), policy).pageSize(4096)
                .skippyLevels(1).skippyNodeEntries(16).captureBufferBytes(1L << 20).segmentBytes(256L << 10).pageWindow(0).build());
        if (agents != null) a.useAgents(agents);
        a.wallClock(wall::get);
        a.attach(memory);
        return a;
    }

    private PageMemory memory(String name) {
        return new PageMemory(new PageStore(FileIOFactory.standard(), dir.resolve(name), 4096), 16L << 20, 1L << 20);
    }

    private static void mark(SnapshotArchive a, long id) {
        a.onMark(id, markOf(id));
        a.beforeStartMarker(id, markOf(id));
        a.afterEndMarker(id, markOf(id));
    }

    /** The WAL LSN of snapshot {@code id}'s checkpoint mark in these tests (shared with RecoveryCompactionCrashTest). */
    static long markOf(long id) {
        return 2 * id + 1;
    }

    /** Changes a page (shared with RecoveryCompactionCrashTest): its pre-state is captured at each level. */
    static void change(PageMemory memory, long pageId, long value) {
        Page p = memory.acquireWrite(pageId);
        p.putLong(64, value);
        memory.releaseWrite(p);
    }

    /**
     * Snapshot 1 at rank 3 (kept for good), snapshot 2 at rank 2 with a page recorded at level 2 for it, then rank-1
     * snapshots ten minutes later: snapshot 2 ages out of level 2, stays its latest, and its records go with the
     * snapshot log's compaction.
     */
    @Test
    void aCompactedDroppedLatestOfALevelStillBoundsItsMappingsAfterRecovery() {
        long last = SnapshotRegistry.COMPACT_MIN_RECORDS + 100;
        PageMemory first = memory("pages");
        try (SnapshotArchive a = open(null, first, KEEP_FOR)) {
            a.recover(0, true);
            declareOneAndTwo(a, first);
            wall.addAndGet(Duration.ofMinutes(11).toMillis());
            declareUntilCompacted(a, 3, last);
        }
        assertLevel2InOrderAfterReopen(KEEP_FOR, last);
    }

    /**
     * The same latest, dropped, left by a crash: snapshot 3 at rank 2 drops snapshot 2 after the mark, and the drop is
     * made durable (before reclamation) while snapshot 3's declaration is lost with the WAL's unsynced tail — as an
     * archive with no WAL to wait for, or a build before drops waited for their cause ({@link WalDurability}), left it. Recovery
     * applies the drop and keeps snapshot 2 as level 2's latest; the snapshots declared after it, at rank 1, let the
     * snapshot log's compaction go past it.
     */
    @Test
    void aLatestDroppedAfterTheMarkAndCompactedAwayStillBoundsItsMappingsAfterTheNextRecovery() {
        long last = SnapshotRegistry.COMPACT_MIN_RECORDS + 100;
        PageMemory first = memory("pages");
        try (SnapshotArchive a = open(null, first, KEEP_LAST)) {
            a.recover(0, true);
            declareOneAndTwo(a, first);
            a.onMark(2, markOf(2));
            a.beforeStartMarker(2, markOf(2));
            a.declare(3, 2, wall.get(), markOf(2) + 1); // keepLast(1) at level 2: snapshot 2 goes
            assertNull(a.find(2));
            a.afterEndMarker(2, markOf(2)); // forces the drop
        } // killed: snapshot 3's snaprec never reached the WAL
        try (SnapshotArchive a = open(null, memory("pages-replay"), KEEP_LAST)) {
            a.recover(markOf(2), false);
            assertNull(a.find(2), "the drop after the mark stands");
            declareUntilCompacted(a, 3, last);
        }
        assertLevel2InOrderAfterReopen(KEEP_LAST, last);
    }

    /**
     * The compaction a recovery runs before replay, which lets go of what the recovered mark dropped: snapshot 2,
     * dropped after the mark by snapshot {@code last + 1} (lost with the WAL's unsynced tail), is level 2's latest once
     * the drop is applied, and that compaction lets its records go. Killed again before the next checkpoint, the store
     * recovers from the same mark.
     */
    @Test
    void aLatestTheRecoverysCompactionLetGoStillBoundsItsMappingsWhenTheSameMarkIsRecoveredAgain() {
        long last = SnapshotRegistry.COMPACT_MIN_RECORDS + 100;
        PageMemory first = memory("pages");
        try (SnapshotArchive a = open(null, first, KEEP_LAST)) {
            a.recover(0, true);
            declareOneAndTwo(a, first);
            for (long id = 3; id <= last; id++) a.declare(id, 1, wall.get(), 2 * id);
            a.onMark(last, markOf(last));
            a.beforeStartMarker(last, markOf(last));
            a.declare(last + 1, 2, wall.get(), markOf(last) + 1); // keepLast(1) at level 2: snapshot 2 goes
            assertNull(a.find(2));
        } // killed after the end marker, before its reclamation
        try (SnapshotArchive a = open(null, memory("pages-replay"), KEEP_LAST)) {
            a.recover(markOf(last), false);
            assertNull(a.find(2), "the drop after the mark stands");
            assertTrue(a.dropHorizon() > 2, "the recovery's compaction let snapshot 2's records go: horizon " + a.dropHorizon());
        } // killed again during replay
        assertLevel2InOrderAfterReopen(KEEP_LAST, last);
    }

    /** Snapshot 1 at rank 3, snapshot 2 at rank 2, then a page changes: mapped to snapshot 2 at levels 1 and 2 (1 at level 3). */
    private void declareOneAndTwo(SnapshotArchive a, PageMemory memory) {
        memory.releaseWrite(memory.acquireNew(CHANGED_PAGE));
        a.declare(1, 3, wall.get(), 2);
        a.declare(2, 2, wall.get(), 4);
        change(memory, CHANGED_PAGE, 2);
    }

    /** Rank-1 snapshots {@code from} to {@code last}, a checkpoint every 100: the snapshot log is compacted past snapshot 2. */
    private void declareUntilCompacted(SnapshotArchive a, long from, long last) {
        for (long id = from; id <= last; id++) {
            a.declare(id, 1, wall.get(), 2 * id);
            if (id % 100 == 0 || id == last) mark(a, id);
        }
        assertNull(a.find(2));
        assertTrue(a.dropHorizon() > 2, "the snapshot log was compacted past snapshot 2: horizon " + a.dropHorizon());
    }

    /**
     * Reopens from the mark of {@code last}; a page last changed before snapshot 1 changes: level 2 records its pre-state
     * mapped to snapshot 2 (or later), not to snapshot 1 after snapshot 2's mapping.
     */
    private void assertLevel2InOrderAfterReopen(RankTreePolicy policy, long last) {
        PageMemory memory = memory("pages-after");
        memory.releaseWrite(memory.acquireNew(OLD_PAGE)); // before the archive is attached: last changed before any snapshot
        Agents agents = Agents.invoked(); // the archiver runs when the test steps it: its failure is thrown here
        try (SnapshotArchive a = open(agents, memory, policy)) {
            a.recover(markOf(last), false);
            change(memory, OLD_PAGE, 1);
            while (agents.invoker("archiver").invoke() > 0) {
                // archive every capture pending
            }
            MaplogFile level2 = a.maplog(2).maplog();
            int n = (int) (level2.count() - level2.first());
            long[] snapshots = new long[n];
            level2.read(level2.first(), n, null, snapshots, null);
            assertEquals(2, n, "the mapping before the reopen and the one after it");
            assertTrue(snapshots[1] >= snapshots[0], "level 2 maps snapshot " + snapshots[1] + " after snapshot " + snapshots[0]);
        }
    }
}
