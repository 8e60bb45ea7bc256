package dev.varve.engine;

import dev.varve.config.VarveConfig;

import java.nio.file.Path;
import java.util.Arrays;

import static dev.varve.engine.FixtureSupport.bytes;
import static dev.varve.engine.FixtureSupport.utf8;

/**
 * Child JVM of {@link LargeDataSetTest} (run with a small heap): writes a data set several times the data region,
 * reads every key and a full scan back, closes, reopens and reads again. Values derive from their key, so no heap
 * model is needed. Exits 0 and prints LARGE-OK on success; any failure prints a stack trace and exits 1.
 */
public final class FixtureLargeDataSet {
    static final int KEYS = Integer.getInteger("varve.large.keys", 32_768);

    private FixtureLargeDataSet() {
    }

    static byte[] key(int i) {
        return utf8(String.format("key-%08d", i));
    }

    static byte[] value(int i) {
        int h = i * 0x9E3779B1;
        h ^= h >>> 15;
        return bytes(i, 1024 + Math.floorMod(h, 3073)); // 1..4 KiB
    }

    static VarveConfig config(Path dir) {
        return VarveConfig.builder().path(dir).pageSize(4096).dataRegionSize(16L << 20).partitions(8)
                .checkpointBufferSize(4L << 20).walSegmentSize(16L << 20).captureBufferSize(1L << 20).build();
    }

    public static void main(String[] args) {
        try {
            run(Path.of(args[0]));
            System.out.println("LARGE-OK");
            System.out.flush();
            System.exit(0);
        } catch (Throwable e) {
            e.printStackTrace(System.out);
            System.out.flush();
            System.exit(1);
        }
    }

    private static void run(Path dir) {
        FixtureChildJvm.watchdog(150, "the large data set");
        long t0 = System.nanoTime();
        long bytes = 0;
        VarveConfig cfg = config(dir);
        try (Varve store = Varve.open(cfg)) {
            Table t = store.table("large");
            for (int n = 0; n < KEYS; n++) {
                int i = (int) ((n * 20_011L) % KEYS); // a permutation (20011 is prime, KEYS a power of two): random insert order
                byte[] v = value(i);
                t.put(key(i), v);
                bytes += v.length;
            }
            System.out.printf("wrote %d keys, %d MiB of values (%.1fx the %d MiB region) in %d ms; heap max %d MiB%n", KEYS, bytes >> 20,
                    (double) bytes / cfg.dataRegionSize(), cfg.dataRegionSize() >> 20, ms(t0), Runtime.getRuntime().maxMemory() >> 20);
            if (bytes < 4 * cfg.dataRegionSize()) throw new AssertionError("data set smaller than 4x the region");
            readBack(t, "before close");
            VarveMetrics m = store.metrics();
            System.out.println("metrics: " + m);
            if (m.pagesEvicted() <= 0) throw new AssertionError("no page was evicted: the data cannot be held by pages alone");
            if (m.pagesRead() <= 0) throw new AssertionError("no page was read back from disk");
            if (m.checkpointsCompleted() <= 0) throw new AssertionError("no checkpoint ran");
        }
        long t1 = System.nanoTime();
        try (Varve store = Varve.open(cfg)) {
            if (store.recoveryReport().replayedRecords() != 0) throw new AssertionError("clean close left records to replay: " + store.recoveryReport());
            readBack(store.table("large"), "after reopen");
            System.out.println("reopened and read back in " + ms(t1) + " ms; metrics: " + store.metrics());
        }
        System.out.println("total " + ms(t0) + " ms");
    }

    private static void readBack(Table t, String when) {
        long t0 = System.nanoTime();
        for (int n = 0; n < KEYS; n++) {
            int i = (int) ((n * 7_919L + 13) % KEYS);
            byte[] v = t.get(key(i));
            if (v == null) throw new AssertionError(when + ": key " + i + " missing");
            if (!Arrays.equals(value(i), v)) throw new AssertionError(when + ": key " + i + " has a wrong value (" + v.length + " bytes)");
        }
        int i = 0;
        try (Cursor c = t.scan(null, null)) {
            while (c.next()) {
                if (i >= KEYS) throw new AssertionError(when + ": scan returned more than " + KEYS + " entries");
                if (!Arrays.equals(key(i), c.key())) throw new AssertionError(when + ": scan entry " + i + " has key " + new String(c.key()));
                if (!Arrays.equals(value(i), c.value())) throw new AssertionError(when + ": scan value of key " + i + " is wrong");
                i++;
            }
        }
        if (i != KEYS) throw new AssertionError(when + ": scan returned " + i + " of " + KEYS + " entries");
        // a range scan in the middle
        int from = KEYS / 3;
        int to = from + 500;
        try (Cursor c = t.scan(key(from), key(to))) {
            for (int k = from; k < to; k++) {
                if (!c.next() || !Arrays.equals(key(k), c.key()) || !Arrays.equals(value(k), c.value()))
                    throw new AssertionError(when + ": range scan wrong at " + k);
            }
            if (c.next()) throw new AssertionError(when + ": range scan went past its end");
        }
        System.out.println(when + ": every key and a full scan checked in " + ms(t0) + " ms");
    }

    private static long ms(long since) {
        return (System.nanoTime() - since) / 1_000_000;
    }
}
