package dev.varve.snapshot;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import dev.varve.core.io.ForwardingFileIOFactory;
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
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The I8 check ({@code varve verify}, {@code Varve.reachableButReclaimed}) takes a snapshot's placement — read level,
 * Start, ranked extent — under the state lock and reads the files outside it. Lazy ranking may move the snapshot in
 * between: copied on to a higher level, its old ranked extent retires and the same checkpoint's reclamation deletes
 * it (as it may give back the old level's Maplog parts and pre-states only it reached). A scan of the old placement
 * then finds them gone: damage reported on a sound store. The check must judge a snapshot where it is read once the
 * scan is done.
 */
@Timeout(120)
class ReclamationCheckMoveRaceTest {
    private static final int PAGES = 120;

    @TempDir
    Path dir;

    /**
     * Runs {@code action} once, when the check next asks whether ranked extent {@code name} exists after
     * {@link #arm}: after it took the snapshot's placement under the state lock, before it reads a file of it.
     */
    private static final class ExistsHook extends ForwardingFileIOFactory {
        private Runnable action;
        private String name;
        boolean fired;

        void arm(String name, Runnable action) {
            this.name = name;
            this.action = action;
        }

        @Override
        public boolean exists(Path file) {
            Runnable a = action;
            if (a != null && file.getFileName().toString().equals(name)) {
                action = null; // once
                fired = true;
                a.run();
            }
            return super.exists(file);
        }
    }

    @Test
    void aSnapshotMovedByLazyRankingWhileTheCheckReadsItIsNotReportedAsDamage() {
        ExistsHook io = new ExistsHook();
        PageMemory memory = new PageMemory(new PageStore(io, dir.resolve("pages"), 4096), 16L << 20, 1L << 20);
        RankTreePolicy policy = RankTreePolicy.levels(Retention.keepLast(3), Retention.keepLast(3), Retention.keepLast(3));
        try (SnapshotArchive archive = new SnapshotArchive(io, ArchiveSettings.builder(dir.resolve("archive"), policy).pageSize(4096).skippyLevels(1)
                .skippyNodeEntries(64).captureBufferBytes(1L << 20).segmentBytes(256L << 10).pageWindow(0).build())) {
            archive.attach(memory);
            archive.recover(0, true);
            for (int i = 0; i < PAGES; i++) memory.releaseWrite(memory.acquireNew(PageId.of(1, i)));
            long lsn = 1;
            archive.declare(1, 1, 1, lsn++);
            changeAll(memory, 1); // snapshot 1's pre-states: level 1 alone
            assertTrue(archive.rank(1, 2, lsn++));
            archive.declare(2, 1, 2, lsn++);
            changeAll(memory, 2);
            checkpoint(archive, lsn++); // lazy ranking copies snapshot 1 into a ranked extent at level 2
            assertEquals(2, archive.readLevel(1), "moved to level 2");
            assertTrue(archive.rank(1, 3, lsn++)); // raised again: the next checkpoint copies it on to level 3
            archive.declare(3, 1, 3, lsn++);
            changeAll(memory, 3);
            assertTrue(archive.reachableButReclaimed().isEmpty(), "sound before the race");

            // once the check has taken snapshot 1's placement (level 2, its extent there), a checkpoint copies it to
            // level 3 and reclaims its level-2 extent, which nothing reads any more
            long mark = lsn;
            io.arm(RankedExtentDescriptor.fileName(1), () -> checkpoint(archive, mark));
            List<String> dangling = archive.reachableButReclaimed();
            assertTrue(io.fired, "the move ran while the check read snapshot 1");
            assertEquals(3, archive.readLevel(1), "snapshot 1 was moved during the check");
            assertTrue(dangling.isEmpty(), "a snapshot moved during the check was reported as damage: " + dangling);
            assertTrue(archive.reachableButReclaimed().isEmpty(), "sound after the race");
        }
    }

    /** The checkpoint protocol's archive steps. */
    private static void checkpoint(SnapshotArchive archive, long mark) {
        archive.onMark(mark, mark);
        archive.beforeStartMarker(mark, mark);
        archive.afterEndMarker(mark, mark);
    }

    private static void changeAll(PageMemory memory, long value) {
        for (int i = 0; i < PAGES; i++) {
            Page p = memory.acquireWrite(PageId.of(1, i));
            p.putLong(64, value);
            memory.releaseWrite(p);
        }
    }
}
