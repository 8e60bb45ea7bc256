package dev.varve.snapshot;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import dev.varve.core.agent.Agents;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.memory.PageMemory;
import dev.varve.core.page.PageId;
import dev.varve.core.store.PageStore;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The compaction a recovery runs before replay lets go of what the recovered mark's drops (and those made durable
 * after it) dropped: here snapshot 2, level 2's latest, aged out by the clock after a mark whose end-marker work never
 * ran. A kill -9 at any step of that compaction — or after it, before the next checkpoint — recovers the same mark
 * again: every image recovers the same live snapshots, and level 2's next mapping is not older than the one its Maplog
 * ends with (I7).
 */
@Timeout(120)
class RecoveryCompactionCrashTest {
    private static final long T0 = Duration.ofDays(20_000).toMillis();
    /** keepLast(1), keepFor(10 min), keepAll(): snapshot 2, at rank 2, ages out of level 2 with no later one counted there. */
    private static final RankTreePolicy POLICY = RankTreePolicy.levels(Retention.keepLast(1), Retention.keepFor(Duration.ofMinutes(10)), Retention.keepAll());
    private static final long CHANGED_PAGE = PageId.of(1, 1);
    private static final long OLD_PAGE = PageId.of(1, 0);

    @TempDir
    Path dir;

    private long wall = T0;
    private int memories;

    private SnapshotArchive open(FileIOFactory io, Path archiveDir, PageMemory memory, Agents agents) {
        SnapshotArchive a = new SnapshotArchive(io, ArchiveSettings.builder(archiveDir, POLICY).pageSize(4096).skippyLevels(1).skippyNodeEntries(16)
                .captureBufferBytes(1L << 20).segmentBytes(256L << 10).pageWindow(0).build());
        if (agents != null) a.useAgents(agents);
        a.wallClock(() -> wall);
        a.attach(memory);
        return a;
    }

    private PageMemory memory() {
        return new PageMemory(new PageStore(FileIOFactory.standard(), dir.resolve("pages-" + memories++), 4096), 16L << 20, 1L << 20);
    }

    @Test
    void aKillAtAnyStepOfTheRecoverysCompactionRecoversTheSameMarkInSnapshotOrder() {
        Path archiveDir = dir.resolve("archive");
        long last = SnapshotRegistry.COMPACT_MIN_RECORDS + 100;
        PageMemory first = memory();
        try (SnapshotArchive a = open(FileIOFactory.standard(), archiveDir, first, null)) {
            a.recover(0, true);
            first.releaseWrite(first.acquireNew(CHANGED_PAGE));
            a.declare(1, 3, wall, 2);
            a.declare(2, 2, wall, 4);
            LevelLatestRecoveryTest.change(first, CHANGED_PAGE, 2); // mapped to snapshot 2 at levels 1 and 2
            for (long id = 3; id <= last; id++) a.declare(id, 1, wall, 2 * id);
            a.onMark(last, LevelLatestRecoveryTest.markOf(last));
            a.beforeStartMarker(last, LevelLatestRecoveryTest.markOf(last)); // the mark is durable; its end-marker work (and compactions) never run
            wall += Duration.ofMinutes(11).toMillis();
            a.enforce(); // the clock ages snapshot 2 out after the mark: no WAL record caused it, its drop may be written
            assertNull(a.find(2));
        } // killed: the drop was written, the end-marker work never ran
        LogCompactionTest.CrashImages images = new LogCompactionTest.CrashImages(archiveDir, dir.resolve("images"));
        List<Long> live;
        images.armed = 1;
        try (SnapshotArchive a = open(images, archiveDir, memory(), null)) {
            a.recover(LevelLatestRecoveryTest.markOf(last), false);
            images.armed = 0;
            assertNull(a.find(2), "the drop after the mark stands");
            assertTrue(a.dropHorizon() > 2, "the recovery's compaction let snapshot 2's records go: horizon " + a.dropHorizon());
            live = a.snapshots().stream().map(SnapshotRecord::id).toList();
        } // killed again, before the next checkpoint
        images.armed = 1;
        images.image("after the recovery");
        assertTrue(images.taken.stream().anyMatch(s -> s.contains("renaming_snapshots.log")), "the snapshot log was compacted: " + images.taken);
        for (String image : images.taken) assertInOrderAfterRecovery(dir.resolve("images").resolve(image), last, live, image);
    }

    /** Recovers the mark of {@code last} from {@code archiveDir}: the same live snapshots, and level 2 stays in snapshot order. */
    private void assertInOrderAfterRecovery(Path archiveDir, long last, List<Long> live, String image) {
        PageMemory memory = memory();
        memory.releaseWrite(memory.acquireNew(OLD_PAGE)); // before the archive is attached: last changed before any snapshot
        Agents agents = Agents.invoked();
        try (SnapshotArchive a = open(FileIOFactory.standard(), archiveDir, memory, agents)) {
            a.recover(LevelLatestRecoveryTest.markOf(last), false);
            assertEquals(live, a.snapshots().stream().map(SnapshotRecord::id).toList(), image + ": the live snapshots");
            LevelLatestRecoveryTest.change(memory, OLD_PAGE, 1);
            while (agents.invoker("archiver").invoke() > 0) {
                // archive every capture pending: an I7 failure is thrown here
            }
            MaplogFile level2 = a.maplog(2).maplog();
            int n = (int) (level2.count() - level2.first());
            long[] snapshots = new long[n];
            level2.read(level2.first(), n, null, snapshots, null);
            for (int i = 1; i < n; i++) assertTrue(snapshots[i] >= snapshots[i - 1], image + ": level 2 maps snapshot " + snapshots[i] + " after " + snapshots[i - 1]);
        } finally {
            memory.close();
        }
    }
}
