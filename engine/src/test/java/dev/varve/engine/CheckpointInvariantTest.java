package dev.varve.engine;

import dev.varve.config.RecoveryMode;
import dev.varve.config.VarveConfig;
import dev.varve.config.WalSyncMode;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Checkpoint invariants I1 (WAL before data) and I2 (a completed checkpoint leaves the store exactly at its mark). */
class CheckpointInvariantTest {
    @TempDir
    Path dir;

    private VarveConfig config(RecoveryMode mode) {
        return VarveConfig.builder().path(dir).dataRegionSize(16L << 20).partitions(4).recoveryMode(mode).walSyncMode(WalSyncMode.LOG_ONLY)
                .walSegmentSize(4L << 20).checkpointFrequency(Duration.ofHours(1)).checkpointBufferSize(1L << 20).build();
    }

    /**
     * I1: with LOG_ONLY nothing but the checkpoint makes the WAL durable, so the WAL must be forced after the last
     * write before the mark and before the checkpoint writes its first page.
     */
    @ParameterizedTest
    @EnumSource(RecoveryMode.class)
    void walIsDurableBeforeAnyPageOfTheCheckpoint(RecoveryMode mode) throws Exception {
        FileOpLog io = new FileOpLog();
        try (Varve store = Varve.open(config(mode), io)) {
            DeterministicReplayTestSupport.workload(store, 0, 500);
            int from = io.ops.size();
            store.checkpoint().get();
            int walForce = io.first(from, "force wal-");
            int pageWrite = io.first(from, "write t");
            assertTrue(pageWrite >= 0, "the checkpoint wrote pages");
            assertTrue(walForce >= 0 && walForce < pageWrite, "I1: the WAL is forced before the first page write: "
                    + io.ops.subList(from, Math.min(io.ops.size(), pageWrite + 1)));
        }
    }

    private static long seqOf(byte[] v) {
        return ByteBuffer.wrap(v).getLong();
    }

    /**
     * I2: a checkpoint taken while a writer keeps writing leaves the page files at its mark, not later — pages the
     * writer changed meanwhile go out as copied at the mark. Cutting the WAL at the mark and reopening shows the page
     * files alone: the writer's writes must be an exact prefix of its sequence.
     */
    @ParameterizedTest
    @EnumSource(RecoveryMode.class)
    void completedCheckpointLeavesTheStoreAtItsMark(RecoveryMode mode) throws Exception {
        int keys = 20_000; // ~600 pages of 100-byte values: the checkpoint takes long enough for the writer to race it
        Varve store = Varve.open(config(mode));
        Table t = store.table("seq");
        for (int k = 0; k < keys; k++) t.put(key(k), value(-1));
        store.checkpoint().get();
        AtomicBoolean stop = new AtomicBoolean();
        AtomicLong written = new AtomicLong();
        Thread writer = new Thread(() -> {
            for (long s = 0; !stop.get(); s++) { // write s goes to key s % keys: a later write never hides an earlier key's absence
                t.put(key((int) (s % keys)), value(s));
                written.set(s + 1);
            }
        });
        writer.start();
        while (written.get() < 2 * keys) Thread.sleep(1);
        long cowBefore = store.metrics().copyOnWritePages();
        store.checkpoint().get(); // under load: copy-on-write keeps the pages at the mark
        assertTrue(store.metrics().copyOnWritePages() > cowBefore, "the writer raced the checkpoint (copy-on-write happened)");
        long markLsn = latestMark();
        while (written.get() < 4 * keys) Thread.sleep(1);
        stop.set(true);
        writer.join();
        store.halt();
        cutWalAt(markLsn, store.config().walSegmentSize());
        try (Varve reopened = Varve.open(config(mode))) {
            assertEquals(0, reopened.recoveryReport().replayedRecords(), "nothing after the mark is left to replay");
            Table r = reopened.table("seq");
            long max = -1;
            List<Long> seen = new ArrayList<>();
            for (int k = 0; k < keys; k++) {
                long s = seqOf(r.get(key(k)));
                seen.add(s);
                max = Math.max(max, s);
            }
            assertTrue(max >= 2 * keys - 1, "the checkpoint holds the writes before it");
            for (int k = 0; k < keys; k++) {
                long s = seen.get(k);
                // the prefix [0, max]: each key holds its last write not after max
                long expected = max - Math.floorMod(max - k, keys);
                assertEquals(expected, s, "I2: key " + k + " is not at the cut " + max + " (a page went out later than the mark)");
            }
        }
    }

    private static byte[] value(long seq) {
        return ByteBuffer.allocate(100).putLong(seq).array();
    }

    private static byte[] key(int k) {
        return String.format("k%06d", k).getBytes();
    }

    /** The mark of the latest complete checkpoint, from its end marker. */
    private long latestMark() throws IOException {
        try (Stream<Path> s = Files.list(dir.resolve("checkpoints"))) {
            Path end = s.filter(p -> p.getFileName().toString().endsWith("-end.bin")).sorted().reduce((a, b) -> b).orElseThrow();
            return ByteBuffer.wrap(Files.readAllBytes(end)).order(ByteOrder.LITTLE_ENDIAN).getLong(24); // CheckpointMarker: markLsn
        }
    }

    /** Removes every WAL record at or after {@code lsn}: zeroes the rest of its segment, deletes later segments. */
    private void cutWalAt(long lsn, long segmentSize) throws IOException {
        long segment = lsn / segmentSize;
        try (Stream<Path> s = Files.list(dir.resolve("wal"))) {
            for (Path p : (Iterable<Path>) s::iterator) {
                String n = p.getFileName().toString();
                if (!n.matches("wal-\\d+\\.seg")) continue; // the next segment prepared ahead: open deletes it
                long index = Long.parseLong(n.substring(4, n.length() - 4));
                if (index > segment) Files.delete(p);
                else if (index == segment) {
                    try (FileChannel ch = FileChannel.open(p, StandardOpenOption.WRITE)) {
                        long from = lsn % segmentSize;
                        ch.write(ByteBuffer.allocate((int) (segmentSize - from)), from);
                    }
                }
            }
        }
    }
}
