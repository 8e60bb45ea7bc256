package dev.varve.snapshot;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import dev.varve.core.io.FileIO;
import dev.varve.core.io.ForwardingFileIO;
import dev.varve.core.io.ForwardingFileIOFactory;
import dev.varve.core.memory.PageMemory;
import dev.varve.core.store.PageStore;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The I8 check ({@code varve verify}, {@code Varve.reachableButReclaimed}) lists the live snapshots under the state
 * lock, then reads each one's Maplog outside it: a snapshot the policy drops in between — its declaration forgotten,
 * its Maplog portions reclaimable — is no longer one whose mappings must be held, and must not be reported as damage.
 */
@Timeout(120)
class ReclamationCheckRaceTest {
    @TempDir
    Path dir;

    /** Runs {@code action} once, at the first read of a Maplog file after {@link #arm}. */
    private static final class ReadHook extends ForwardingFileIOFactory {
        private Runnable action;
        boolean fired;

        void arm(Runnable action) {
            this.action = action;
        }

        @Override
        public FileIO open(Path file, boolean create) throws IOException {
            FileIO f = super.open(file, create);
            if (!file.getFileName().toString().startsWith("maplog-")) return f;
            return new ForwardingFileIO(f) {
                @Override
                public int read(ByteBuffer dst, long position) throws IOException {
                    Runnable a = action;
                    if (a != null) {
                        action = null; // once: the action's own reads go through
                        fired = true;
                        a.run();
                    }
                    return super.read(dst, position);
                }
            };
        }
    }

    @Test
    void aSnapshotDroppedWhileTheCheckRunsIsNotReportedAsDamage() {
        ReadHook io = new ReadHook();
        PageMemory memory = new PageMemory(new PageStore(io, dir.resolve("pages"), 4096), 16L << 20, 1L << 20);
        RankTreePolicy policy = RankTreePolicy.levels(Retention.keepLast(3), Retention.keepLast(2));
        try (SnapshotArchive archive = new SnapshotArchive(io, ArchiveSettings.builder(dir.resolve("archive"), policy).pageSize(4096).skippyLevels(1)
                .skippyNodeEntries(64).captureBufferBytes(1L << 20).segmentBytes(256L << 10).pageWindow(0).build())) {
            ReclamationOrderTest.declareSixtyOverChangingPages(archive, memory); // live: 58, 59, 60 at level 1; 56 and 60 (rank 2) at level 2
            assertEquals(List.of(56L, 58L, 59L, 60L), archive.snapshots().stream().map(SnapshotRecord::id).toList());
            assertTrue(archive.reachableButReclaimed().isEmpty(), "sound before the race");
            // while the check reads snapshot 56, eight more snapshots drop 56 to 60, 60 of rank 2 and read through level 2
            // (no page changes: the archiver, which would wait for the Maplog file this thread reads, has nothing to do)
            io.arm(() -> {
                for (long id = 61; id <= 68; id++) archive.declare(id, id % 4 == 0 ? 2 : 1, id, 1000 + id);
            });
            List<String> dangling = archive.reachableButReclaimed();
            assertTrue(io.fired, "the drop ran while the check read the Maplog");
            assertNull(archive.find(60), "snapshot 60 was dropped during the check");
            assertTrue(dangling.isEmpty(), "a snapshot dropped during the check was reported as damage: " + dangling);
            assertTrue(archive.reachableButReclaimed().isEmpty(), "sound after the race");
        }
    }
}
