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
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * I8, Thresher's reclamation order: after reclamation no live snapshot maps a page to reclaimed data. The check
 * holds after the archive's own reclamation (temporal order, only what no live snapshot can reach), and catches a
 * reclamation that ignores that order. Maplog portions are reclaimed only below the checkpoint mark, so that
 * recovery can always cut back to it (I5).
 */
@Timeout(180)
class ReclamationOrderTest {
    @TempDir
    Path dir;

    @Test
    void reclamationNeverLeavesALiveMappingDangling() {
        FileIOFactory io = FileIOFactory.standard();
        PageMemory memory = new PageMemory(new PageStore(io, dir.resolve("pages"), 4096), 16L << 20, 1L << 20);
        RankTreePolicy policy = RankTreePolicy.levels(Retention.keepLast(3), Retention.keepLast(2));
        try (SnapshotArchive archive = new SnapshotArchive(io, ArchiveSettings.builder(dir.resolve("archive"), policy).pageSize(4096).skippyLevels(1).skippyNodeEntries(64)
                .captureBufferBytes(1L << 20).segmentBytes(256L << 10).pageWindow(0).build())) {
            declareSixtyOverChangingPages(archive, memory);
            assertTrue(archive.reclaimedBytes() > 0, "the archive reclaimed segments");
            List<String> dangling = archive.reachableButReclaimed();
            assertTrue(dangling.isEmpty(), "reclamation left live mappings dangling: " + dangling);

            // reclaiming out of order — everything older than the segment being written, needed or not — is caught
            archive.volume(1).reclaimOldest(Long.MAX_VALUE, (lo, hi) -> true);
            archive.volume(2).reclaimOldest(Long.MAX_VALUE, (lo, hi) -> true);
            assertFalse(archive.reachableButReclaimed().isEmpty(), "a reclamation that ignored the order rule went unnoticed");
        }
    }

    /**
     * Attaches and recovers {@code archive}, then declares sixty snapshots (every fourth of rank 2) over 120 pages,
     * each of which changes after every snapshot, running the checkpoint protocol's archive steps after every fifth:
     * what the archive holds keeps expiring, so it reclaims segments and Maplog portions.
     */
    static void declareSixtyOverChangingPages(SnapshotArchive archive, PageMemory memory) {
        archive.attach(memory);
        archive.recover(0, true);
        int pages = 120;
        for (int i = 0; i < pages; i++) memory.releaseWrite(memory.acquireNew(PageId.of(1, i)));
        long lsn = 1;
        for (long id = 1; id <= 60; id++) {
            archive.declare(id, id % 4 == 0 ? 2 : 1, id, lsn++);
            for (int i = 0; i < pages; i++) { // every page changes after every snapshot: its pre-state is captured
                Page p = memory.acquireWrite(PageId.of(1, i));
                p.putLong(64, id);
                memory.releaseWrite(p);
            }
            if (id % 5 == 0) { // the checkpoint protocol's archive steps
                archive.onMark(id, lsn);
                archive.beforeStartMarker(id, lsn);
                archive.afterEndMarker(id, lsn);
                lsn++;
            }
        }
    }

    /**
     * I5 with Maplog reclamation: recovery cuts every level back to the recovered checkpoint mark, so a checkpoint
     * may reclaim Maplog portions only below its own mark — even when every snapshot still live was declared after
     * the mark (here keepLast(1) drops all older ones while the checkpoint runs).
     */
    @Test
    void maplogPortionsFromTheMarkOnStaySoRecoveryCanCutBack() throws Exception {
        FileIOFactory io = FileIOFactory.standard();
        PageMemory memory = new PageMemory(new PageStore(io, dir.resolve("pages"), 4096), 16L << 20, 1L << 20);
        RankTreePolicy policy = RankTreePolicy.levels(Retention.keepLast(1));
        int pages = 120;
        long mark = 2;
        long mappingsAtMark;
        Agents agents = Agents.invoked(); // the archiver runs only when this test (or a wait for it) steps it
        try (SnapshotArchive archive = new SnapshotArchive(io, ArchiveSettings.builder(dir.resolve("archive"), policy).pageSize(4096).skippyLevels(1).skippyNodeEntries(16)
                .captureBufferBytes(1L << 20).segmentBytes(256L << 10).pageWindow(0).build())) {
            archive.useAgents(agents);
            archive.attach(memory);
            archive.recover(0, true);
            for (int i = 0; i < pages; i++) memory.releaseWrite(memory.acquireNew(PageId.of(1, i)));
            archive.declare(1, 1, 1, 1);
            changeAll(memory, pages, 1);
            archive.onMark(1, mark);
            archive.beforeStartMarker(1, mark); // the archive is durable up to the mark: 120 mappings
            mappingsAtMark = archive.maplog(1).size();
            long last = 25; // enough mappings after the mark to fill the Maplog's write buffer into new portions
            for (long id = 2; id <= last; id++) { // after the mark, before the checkpoint ends: the older ones drop
                archive.declare(id, 1, id, mark + id);
                changeAll(memory, pages, id);
            }
            int steps = 0;
            while (agents.invoker("archiver").invoke() > 0) steps++; // archive every capture still pending
            assertTrue(steps > 0, "captures were left for the archiver");
            assertEquals(last * pages, archive.maplog(1).size(), "every capture was archived");
            archive.afterEndMarker(1, mark);
            assertTrue(archive.maplog(1).maplog().first() <= mappingsAtMark, "Maplog portions after the mark were reclaimed: first held "
                    + archive.maplog(1).maplog().first() + ", mark at " + mappingsAtMark);
        }
        // a crash before the next checkpoint: recovery cuts back to the mark, which must still be there
        try (SnapshotArchive archive = new SnapshotArchive(io, ArchiveSettings.builder(dir.resolve("archive"), policy).pageSize(4096).skippyLevels(1).skippyNodeEntries(16)
                .captureBufferBytes(1L << 20).segmentBytes(256L << 10).pageWindow(0).build())) {
            archive.recover(mark, false);
            assertEquals(mappingsAtMark, archive.maplog(1).size());
            assertTrue(archive.reachableButReclaimed().isEmpty());
        }
    }

    private static void changeAll(PageMemory memory, int pages, long value) {
        for (int i = 0; i < pages; i++) {
            Page p = memory.acquireWrite(PageId.of(1, i));
            p.putLong(64, value);
            memory.releaseWrite(p);
        }
    }
}
