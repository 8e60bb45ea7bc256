package dev.varve.engine;

import dev.varve.config.VarveConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

import static dev.varve.engine.FixtureSupport.bytes;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The descriptors a store holds do not grow with the history it keeps. Under the default retention (keep
 * everything) the archive's Maplog parts and Pagelog segments are never reclaimed; each held a descriptor (two once
 * fsynced) for the store's life, so a store declaring a snapshot after every batch ran out of descriptors within
 * minutes and then could not be opened under the same limit. Now a file holds one while it is appended to, written
 * since the last checkpoint, or among the few of its log read lately.
 */
@Timeout(120)
class ArchiveDescriptorsTest {
    @TempDir
    Path dir;

    @Test
    void archiveFilesHoldABoundedNumberOfDescriptors() throws IOException {
        // small Pagelog segments and Skippy nodes: a Maplog part of 64 mappings, a segment of 63 records
        VarveConfig config = FixtureSupport.small(dir).archiveSegmentSize(256L << 10).skippyNodeEntries(8).build();
        long afterFirstRun;
        try (Varve store = Varve.open(config)) {
            write(store, 0, 3_000);
            store.checkpoint().join();
            long files = archiveFiles();
            afterFirstRun = descriptorsUnder(dir.resolve("archive"));
            // each file held one descriptor, two once fsynced: over 1,200 here before
            assertTrue(files > 600, "the run made many archive files: " + files);
            assertTrue(afterFirstRun < BOUND, "archive descriptors held after a checkpoint: " + afterFirstRun + " for " + files + " files");
            write(store, 3_000, 3_000);
            store.checkpoint().join();
            long held = descriptorsUnder(dir.resolve("archive"));
            assertTrue(held < BOUND, "archive descriptors held after twice the history: " + held + " for " + archiveFiles() + " files");
        }
        try (Varve store = Varve.open(config)) {
            assertTrue(descriptorsUnder(dir.resolve("archive")) < BOUND, "archive descriptors held after open");
            for (SnapshotInfo s : List.of(store.snapshots().get(0), store.snapshots().get(3_000))) { // the oldest files are read again
                try (SnapshotView old = store.asOf(s.id())) {
                    assertArrayEquals(value(s.id() - 1), old.table("t").get(key((int) (s.id() - 1) % KEYS)), "snapshot " + s.id());
                }
            }
            assertTrue(descriptorsUnder(dir.resolve("archive")) < BOUND, "archive descriptors held after reading old snapshots");
        }
    }

    /**
     * What the archive may hold open whatever its history: per log, the file appended to and a few read lately, each
     * with the second descriptor an fsynced file keeps (the Pagelog 1 + 16, each Skippy level and uplink log 1 + 4,
     * one each for the other logs).
     */
    private static final int BOUND = 2 * (17 + 5 * 5) + 2 * 8;
    private static final int KEYS = 2_000;

    /** Batches [from, from + n), each of four puts, the last of them the key of the batch, then a snapshot. */
    private static void write(Varve store, int from, int n) {
        store.table("t");
        for (int batch = from; batch < from + n; batch++) {
            int b = batch;
            store.writeAndSnapshot(w -> {
                for (int i = 1; i < 4; i++) w.put("t", key((b * 7 + i * 131) % KEYS), value(-b));
                w.put("t", key(b % KEYS), value(b));
            });
        }
    }
    private static byte[] key(int i) {
        return ("k" + i).getBytes(java.nio.charset.StandardCharsets.UTF_8);
    }

    private static byte[] value(long i) {
        return bytes(i, 120);
    }

    private long archiveFiles() throws IOException {
        try (Stream<Path> s = Files.walk(dir.resolve("archive"))) {
            return s.filter(Files::isRegularFile).count();
        }
    }

    /** Open file descriptors of this process on files under {@code under} (Linux). */
    private static long descriptorsUnder(Path under) throws IOException {
        String prefix = under.toAbsolutePath().toString();
        try (Stream<Path> s = Files.list(Path.of("/proc/self/fd"))) {
            return s.filter(fd -> {
                try {
                    return Files.readSymbolicLink(fd).toString().startsWith(prefix);
                } catch (IOException e) {
                    return false; // closed meanwhile
                }
            }).count();
        }
    }
}
