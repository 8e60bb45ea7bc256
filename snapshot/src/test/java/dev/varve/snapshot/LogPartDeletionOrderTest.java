package dev.varve.snapshot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import dev.varve.core.io.ForwardingFileIOFactory;
import dev.varve.core.memory.PageMemory;
import dev.varve.core.store.PageStore;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Pagelog segments and Maplog parts are reclaimed oldest first, and open refuses a gap among them as a lost file. A
 * deletion is durable only once its directory is fsynced, and a power cut may keep a later deletion without an
 * earlier one: so each deletion of a part must be durable before the next part goes. Found by a power-loss review
 * whose model keeps any subset of a directory's un-fsynced entry operations.
 */
@Timeout(180)
class LogPartDeletionOrderTest {
    @TempDir
    Path dir;

    /** Deletions of log parts not yet made durable by a directory fsync, per directory; parts deleted past one. */
    private static final class DeletionWatch extends ForwardingFileIOFactory {
        final Map<Path, List<String>> undurable = new HashMap<>();
        final List<String> violations = new ArrayList<>();
        int partsDeleted;

        private static boolean isLogPart(Path file) {
            String n = file.getFileName().toString();
            return n.startsWith(PagelogDescriptor.FILE_PREFIX) || n.contains(".log");
        }

        @Override
        public synchronized void delete(Path file) throws IOException {
            Path d = file.toAbsolutePath().normalize().getParent();
            if (isLogPart(file)) {
                partsDeleted++;
                List<String> pending = undurable.computeIfAbsent(d, k -> new ArrayList<>());
                if (!pending.isEmpty()) violations.add(file.getFileName() + " deleted while the deletion of " + pending + " was not durable");
                pending.add(file.getFileName().toString());
            }
            super.delete(file);
        }

        @Override
        public synchronized void forceDirectory(Path directory) throws IOException {
            super.forceDirectory(directory);
            undurable.remove(directory.toAbsolutePath().normalize());
        }

        @Override
        public synchronized void atomicMove(Path from, Path to) throws IOException {
            super.atomicMove(from, to); // fsyncs the directory it renames into
            undurable.remove(to.toAbsolutePath().normalize().getParent());
        }
    }

    @Test
    void eachReclaimedPartIsGoneDurablyBeforeTheNextGoes() {
        DeletionWatch io = new DeletionWatch();
        PageMemory memory = new PageMemory(new PageStore(io, dir.resolve("pages"), 4096), 16L << 20, 1L << 20);
        RankTreePolicy policy = RankTreePolicy.levels(Retention.keepLast(3), Retention.keepLast(2));
        try (SnapshotArchive archive = new SnapshotArchive(io, ArchiveSettings.builder(dir.resolve("archive"), policy).pageSize(4096)
                .skippyLevels(1).skippyNodeEntries(64).captureBufferBytes(1L << 20).segmentBytes(256L << 10).pageWindow(0).build())) {
            ReclamationOrderTest.declareSixtyOverChangingPages(archive, memory);
            assertTrue(io.partsDeleted >= 4, "reclamation deleted several parts: " + io.partsDeleted);
        }
        assertEquals(List.of(), io.violations.subList(0, Math.min(3, io.violations.size())), io.violations.size() + " deletions out of order");
    }
}
