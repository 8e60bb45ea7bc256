package dev.varve.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import dev.varve.config.VarveConfig;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A view opened while captures made before its snapshot's declaration are still on their way to the archive reads
 * exactly its snapshot. Its page table was caught up from where the archiver stood when the view began to build it,
 * so when that was before the snapshot's Start, the mappings in between — pre-states of the snapshot before — were
 * taken for its own: views of recent snapshots read the previous version of every page changed since (found by a
 * concurrency review with checkpoints running back to back, which keep the archiver behind the declarations).
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class ViewsDuringCheckpointsTest {
    private static final int KEYS = 60;
    private static final long RUN_MILLIS = 6_000;

    @TempDir
    Path dir;

    private static byte[] key(int k) {
        return String.format("key-%03d", k).getBytes();
    }

    /** Version {@code ver} of key {@code k}; every seventh key takes overflow pages. */
    private static byte[] value(int k, int ver) {
        int len = k % 7 == 0 ? 5000 + ver % 3 * 1000 : 40 + (ver * 7 + k) % 200;
        byte[] v = new byte[len];
        ByteBuffer.wrap(v).putInt(k).putInt(ver);
        for (int i = 8; i < len; i++) v[i] = (byte) (k * 31 + ver * 17 + i);
        return v;
    }

    private static int versionOf(byte[] value) {
        return value == null ? -1 : ByteBuffer.wrap(value).getInt(4);
    }

    @Test
    void viewsOfRecentSnapshotsReadExactlyTheirSnapshotWhileCheckpointsRunBackToBack() throws Exception {
        VarveConfig config = VarveConfig.builder().path(dir).dataRegionSize(8L << 20).partitions(4)
                .checkpointFrequency(Duration.ofMillis(50)).checkpointBufferSize(256L << 10).captureBufferSize(256L << 10)
                .archiveSegmentSize(256L << 10).snapshotPageWindow(4).retention(RankTreePolicy.levels(Retention.keepLast(100_000)))
                .walSegmentSize(4L << 20).build();
        Map<Long, Integer> versionAt = new ConcurrentHashMap<>();
        List<Long> ids = new CopyOnWriteArrayList<>();
        AtomicBoolean stop = new AtomicBoolean();
        AtomicLong checks = new AtomicLong();
        List<String> wrong = new CopyOnWriteArrayList<>();
        List<Throwable> failures = new CopyOnWriteArrayList<>();
        try (Varve store = Varve.open(config)) {
            List<Thread> threads = new ArrayList<>();
            threads.add(new Thread(() -> { // every snapshot holds one version of every key
                for (int ver = 1; !stop.get(); ver++) {
                    int v = ver;
                    long id = store.writeAndSnapshot(b -> {
                        for (int k = 0; k < KEYS; k++) b.put(k % 2 == 0 ? "a" : "b", key(k), value(k, v));
                    });
                    versionAt.put(id, v);
                    ids.add(id);
                }
            }, "writer"));
            threads.add(new Thread(() -> {
                while (!stop.get()) store.checkpoint().join();
            }, "checkpoints"));
            for (int n = 0; n < 2; n++) {
                long seed = n;
                threads.add(new Thread(() -> {
                    SplittableRandom random = new SplittableRandom(seed);
                    while (!stop.get()) {
                        if (ids.isEmpty()) {
                            Thread.onSpinWait();
                            continue;
                        }
                        long id = ids.get(Math.max(0, ids.size() - 1 - random.nextInt(12)));
                        int ver = versionAt.get(id);
                        try (SnapshotView view = store.asOf(id)) {
                            for (int k = 0; k < KEYS; k++) {
                                byte[] got = view.table(k % 2 == 0 ? "a" : "b").get(key(k));
                                if (versionOf(got) != ver && wrong.size() < 10)
                                    wrong.add("snapshot " + id + " key " + k + ": version " + versionOf(got) + ", not " + ver);
                            }
                            checks.incrementAndGet();
                        }
                    }
                }, "viewer-" + n));
            }
            for (Thread t : threads) {
                t.setUncaughtExceptionHandler((th, e) -> {
                    failures.add(e);
                    stop.set(true);
                });
                t.start();
            }
            Thread.sleep(RUN_MILLIS);
            stop.set(true);
            for (Thread t : threads) t.join();
        }
        assertEquals(List.of(), failures);
        assertEquals(List.of(), wrong, "views read another snapshot's pages (" + checks + " views checked)");
    }
}
