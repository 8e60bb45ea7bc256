package dev.varve.engine;

import dev.varve.config.VarveConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.Random;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.*;

/**
 * What the Cursor contract promises while a writer changes the same table, and checkpoints run: keys in order and
 * each once, every value one stored under its key, keys present throughout never skipped; a snapshot view's
 * cursor reads exactly the snapshot. Keys are 4-byte big-endian numbers with high bytes (0x80..0xFF) so unsigned
 * order matters; even keys are always present, odd ones come and go; each value names its key.
 */
@Timeout(120)
class CursorDuringWritesTest {
    static final int KEYS = 1500;
    @TempDir
    Path dir;

    static byte[] key(int i) {
        return ByteBuffer.allocate(4).putInt(0x80000000 + i * 977).array(); // 977 spreads keys across the top byte
    }

    /** A value naming key {@code i}, of a length that moves it in and out of overflow chains as versions change. */
    static byte[] value(int i, int version) {
        int len = (i + version) % 4 == 0 ? 1500 + version % 1000 : 8 + version % 50;
        ByteBuffer b = ByteBuffer.allocate(len + 8).putInt(i).putInt(version);
        return b.array();
    }

    static int keyIndex(byte[] key) {
        return (ByteBuffer.wrap(key).getInt() - 0x80000000) / 977;
    }

    @Test
    void scansWhileWritingSeeEveryStableKeyOnceInOrder() throws Exception {
        VarveConfig cfg = VarveConfig.builder().path(dir).pageSize(1024).dataRegionSize(32L << 20).partitions(3)
                .checkpointFrequency(Duration.ofMillis(30))
                .checkpointBufferSize(4L << 20).captureBufferSize(1L << 20).walSegmentSize(4L << 20).build();
        try (Varve store = Varve.open(cfg)) {
            Table t = store.table("t");
            for (int i = 0; i < KEYS; i += 2) t.put(key(i), value(i, 0));
            long snap = store.snapshotNow();
            AtomicBoolean stop = new AtomicBoolean();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            Thread writer = new Thread(() -> {
                Random r = new Random(7);
                try {
                    for (int version = 1; !stop.get(); version++) {
                        int i = r.nextInt(KEYS);
                        if (i % 2 == 0 || r.nextBoolean()) t.put(key(i), value(i, version));
                        else t.remove(key(i));
                        if (version % 500 == 0) store.write(b -> { // a batch over many keys at once
                            for (int j = 1; j < KEYS; j += 50) b.remove("t", key(j));
                        });
                    }
                } catch (Throwable e) {
                    failure.set(e);
                }
            });
            writer.start();
            try (SnapshotView view = store.asOf(snap)) {
                Thread viewReader = new Thread(() -> { // the same view from a second thread: gets and partition scans
                    Random r = new Random(11);
                    try {
                        while (!stop.get()) {
                            int i = r.nextInt(KEYS);
                            byte[] v = view.table("t").get(key(i));
                            if (i % 2 == 1) assertNull(v, "key " + i + " is not in the snapshot");
                            else assertArrayEquals(value(i, 0), v, "key " + i + " as of the snapshot");
                            if (i % 50 == 0) checkScan(view.table("t").scan(key(i), null), true, i);
                        }
                    } catch (Throwable e) {
                        failure.compareAndSet(null, e);
                    }
                });
                viewReader.start();
                try {
                    for (int pass = 0; pass < 30 && failure.get() == null; pass++) {
                        checkScan(pass % 3 == 0 ? view.table("t").scan(null, null) : t.scan(null, null), pass % 3 == 0, "pass " + pass);
                        int p = pass % 3;
                        boolean[] stableHere = new boolean[KEYS];
                        for (int i = 0; i < KEYS; i += 2) stableHere[i] = KeyHash.partition(key(i), 3) == p;
                        checkPartitionScan(t.partition(p).scan(null, null), stableHere, "pass " + pass + " partition " + p);
                        for (int i = 0; i < KEYS; i += 97) assertNotNull(t.get(key(i - i % 2)), "an always-present key read as absent");
                    }
                } finally {
                    stop.set(true);
                    viewReader.join(); // before the view closes
                }
            } finally {
                stop.set(true);
                writer.join();
            }
            if (failure.get() != null) throw new AssertionError("the writer or the view reader failed", failure.get());
        }
    }

    private static void checkScan(Cursor c, boolean snapshot, String what) {
        checkScan(c, snapshot, 0, what);
    }

    /** A scan from key {@code from} on: the even keys from there once each; for a snapshot, no odd key. */
    private static void checkScan(Cursor c, boolean snapshot, int from) {
        checkScan(c, snapshot, from, "view scan from " + from);
    }

    private static void checkScan(Cursor c, boolean snapshot, int from, String what) {
        boolean[] stable = new boolean[KEYS];
        for (int i = from + from % 2; i < KEYS; i += 2) stable[i] = true;
        int[] seen = drain(c, what, snapshot);
        for (int i = 0; i < KEYS; i++) {
            if (stable[i]) assertEquals(1, seen[i], what + ": key " + i + " seen " + seen[i] + " times");
            else if (snapshot) assertEquals(0, seen[i], what + ": key " + i + " is not in the snapshot or not in the range");
        }
    }

    private static void checkPartitionScan(Cursor c, boolean[] stable, String what) {
        int[] seen = drain(c, what, false);
        for (int i = 0; i < KEYS; i++) if (stable[i]) assertEquals(1, seen[i], what + ": key " + i + " seen " + seen[i] + " times");
    }

    private static int[] drain(Cursor c, String what, boolean snapshot) {
        int[] seen = new int[KEYS];
        byte[] last = null;
        try (c) {
            while (c.next()) {
                byte[] k = c.key(), v = c.value();
                if (last != null) assertTrue(Arrays.compareUnsigned(last, k) < 0, what + ": keys out of order or repeated");
                last = k;
                int i = keyIndex(k);
                seen[i]++;
                ByteBuffer b = ByteBuffer.wrap(v);
                assertEquals(i, b.getInt(), what + ": a value of another key under key " + i);
                int version = b.getInt();
                assertArrayEquals(value(i, version), v, what + ": torn value of key " + i);
                if (snapshot) assertEquals(0, version, what + ": the view shows a later write");
            }
        }
        return seen;
    }
}
