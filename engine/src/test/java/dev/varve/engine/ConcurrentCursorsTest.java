package dev.varve.engine;

import dev.varve.config.VarveConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Cursors on several threads over the same table while several writers change it (CursorDuringWritesTest has one
 * writer and one scanning thread): table, partition and range scans each return keys in order, each once, with a
 * value stored under it, and every key present for the whole scan — the even keys, which writers only overwrite — is
 * returned exactly once.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class ConcurrentCursorsTest {
    private static final int KEYS = 3000;
    private static final int WRITERS = 2;
    private static final int PARTITIONS = 3;

    @TempDir
    Path dir;

    private static byte[] key(int i) {
        return ByteBuffer.allocate(4).putInt(0x80000000 + i * 613).array(); // high bytes: unsigned order matters
    }

    private static int index(byte[] key) {
        return (ByteBuffer.wrap(key).getInt() - 0x80000000) / 613;
    }

    /** A value naming key {@code i}; its length moves it in and out of overflow pages as versions change. */
    private static byte[] value(int i, int version) {
        int length = (i + version) % 5 == 0 ? 1200 + version % 700 : 8 + version % 40;
        return ByteBuffer.allocate(length + 8).putInt(i).putInt(version).array();
    }

    @Test
    void cursorsOnSeveralThreadsWhileSeveralWritersRun() throws Exception {
        VarveConfig cfg = FixtureSupport.small(dir).pageSize(1024).dataRegionSize(8L << 20).partitions(PARTITIONS)
                .checkpointFrequency(Duration.ofMillis(20)).build();
        AtomicBoolean stop = new AtomicBoolean();
        ExecutorService pool = Executors.newFixedThreadPool(WRITERS + 2);
        try (Varve store = Varve.open(cfg)) {
            Table t = store.table("t");
            for (int i = 0; i < KEYS; i += 2) t.put(key(i), value(i, 0));
            List<Future<?>> tasks = new ArrayList<>();
            for (int w = 0; w < WRITERS; w++) {
                int writer = w;
                tasks.add(pool.submit(() -> { // writer w owns the keys i with i / 2 % WRITERS == w
                    SplittableRandom r = new SplittableRandom(writer);
                    for (int version = 1; version < 200_000 && !stop.get(); version++) {
                        int i = (r.nextInt(KEYS / 2 / WRITERS) * WRITERS + writer) * 2 + r.nextInt(2);
                        if (i % 2 == 0 || r.nextBoolean()) t.put(key(i), value(i, version));
                        else t.remove(key(i));
                        if (version % 300 == 0) {
                            int v = version;
                            store.write(b -> { // many of its odd keys at once, over every partition
                                for (int j = writer * 2 + 1; j < KEYS; j += 2 * WRITERS * 7) {
                                    if (v % 600 == 0) b.remove("t", key(j));
                                    else b.put("t", key(j), value(j, v));
                                }
                            });
                        }
                    }
                    return null;
                }));
            }
            for (int c = 0; c < 2; c++) {
                int reader = c;
                tasks.add(pool.submit(() -> {
                    SplittableRandom r = new SplittableRandom(100 + reader);
                    for (int pass = 0; pass < 120 && !stop.get(); pass++) {
                        switch (pass % 3) {
                            case 0 -> check(t.scan(null, null), 0, KEYS, -1);
                            case 1 -> {
                                int p = r.nextInt(PARTITIONS);
                                check(t.partition(p).scan(null, null), 0, KEYS, p);
                            }
                            default -> {
                                int from = r.nextInt(KEYS), to = from + r.nextInt(KEYS - from + 1);
                                check(t.scan(key(from), key(to)), from, to, -1);
                            }
                        }
                    }
                    return null;
                }));
            }
            for (int i = tasks.size() - 2; i < tasks.size(); i++) tasks.get(i).get(100, TimeUnit.SECONDS); // the readers' passes
            stop.set(true);
            ConcurrentBatchModelTest.awaitAll(tasks, stop);
        } finally {
            stop.set(true);
            pool.shutdownNow();
        }
    }

    /**
     * A scan of keys [from, to) (of partition {@code partition}, or of every one when -1): ascending, each once, each
     * value naming its key, and every even key of the range there.
     */
    private static void check(Cursor c, int from, int to, int partition) {
        boolean[] seen = new boolean[KEYS];
        byte[] previous = null;
        try (c) {
            while (c.next()) {
                byte[] k = c.key();
                if (previous != null) assertTrue(Arrays.compareUnsigned(previous, k) < 0, "keys out of order or repeated at " + index(k));
                previous = k;
                int i = index(k);
                assertTrue(i >= from && i < to, "key " + i + " outside [" + from + ", " + to + ")");
                assertEquals(i, ByteBuffer.wrap(c.value()).getInt(), "the value returned under key " + i + " was stored under another");
                seen[i] = true;
            }
        }
        for (int i = from + from % 2; i < to; i += 2) {
            if (partition >= 0 && KeyHash.partition(key(i), PARTITIONS) != partition) continue;
            assertTrue(seen[i], "key " + i + ", present throughout, was not returned");
        }
    }
}
