package dev.varve.engine;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.RecoveryCompression;
import dev.varve.config.RecoveryMode;
import dev.varve.config.Retention;
import dev.varve.config.VarveConfig;
import dev.varve.config.WalSyncMode;
import dev.varve.core.page.Page;
import dev.varve.core.tree.PageLayout;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A data set several times the 8 MiB data region, written by two writers (each owning its tables) against a 256 KiB
 * checkpoint buffer: puts of every size up to 1 MiB values (overflow chains longer than the buffer), removes that
 * fragment leaves, snapshots whose history is evicted. Checked against an in-heap model live, as of each snapshot,
 * after a crash (halt: no checkpoint at close) in each recovery mode with SKIP_GARBAGE recovery data, and after a
 * clean close; then every page of every page file is read raw: the bytes SKIP_GARBAGE leaves out of a page image
 * ({@link PageLayout#unusedRange}) must be zero, or a page restored from a recovery file differs from the page.
 */
@Timeout(300)
class MemoryPressureModelTest {
    private static final int WRITERS = 2;
    private static final int TABLES_PER_WRITER = 3;
    private static final int KEYS = 1500;
    private static final int OPS = 5000;

    @TempDir
    Path dir;

    private VarveConfig config(RecoveryMode mode) {
        return VarveConfig.builder().path(dir).pageSize(4096).dataRegionSize(8L << 20).partitions(4).recoveryMode(mode)
                .recoveryCompression(RecoveryCompression.SKIP_GARBAGE).walSyncMode(WalSyncMode.LOG_ONLY)
                .walSegmentSize(8L << 20).checkpointFrequency(Duration.ofMillis(200)).checkpointBufferSize(256L << 10)
                .retention(RankTreePolicy.levels(Retention.keepLast(3))).captureBufferSize(1L << 20).build();
    }

    /** One writer's tables: table name to key to value. */
    private record Model(Map<String, TreeMap<String, byte[]>> tables) {
        Model copy() {
            Map<String, TreeMap<String, byte[]>> m = new HashMap<>();
            tables.forEach((t, kv) -> m.put(t, new TreeMap<>(kv)));
            return new Model(m);
        }
    }

    private static String table(int writer, int t) {
        return "w" + writer + "-t" + t;
    }

    private static byte[] key(int k) {
        return String.format("key-%06d", k).getBytes(StandardCharsets.UTF_8);
    }

    private static byte[] value(SplittableRandom r) {
        int kind = r.nextInt(400);
        int length = kind == 0 ? (1 << 20) : kind < 20 ? 4000 + r.nextInt(30_000) : r.nextInt(900);
        byte[] v = new byte[length];
        for (int i = 0; i < length; i += 64) v[i] = (byte) r.nextInt(); // sparse: compressible, yet every value differs
        return v;
    }

    /** Runs writer {@code w}'s ops into {@code store} and {@code model}; declares snapshots on the way (writer 0). */
    private static void write(Varve store, int w, Model model, List<long[]> snapshotIds, List<Model> snapshotModels) {
        SplittableRandom r = new SplittableRandom(31L * w + 7);
        for (int op = 0; op < OPS; op++) {
            int t = r.nextInt(TABLES_PER_WRITER);
            String name = table(w, t);
            int k = r.nextInt(KEYS);
            String ks = new String(key(k), StandardCharsets.UTF_8);
            if (r.nextInt(4) == 0) {
                store.table(name).remove(key(k));
                model.tables.get(name).remove(ks);
            } else {
                byte[] v = value(r);
                store.table(name).put(key(k), v);
                model.tables.get(name).put(ks, v);
            }
            if (w == 0 && op % 1000 == 999) {
                // writer 1 runs on: the snapshot holds only writer 0's tables exactly, which is what is checked
                synchronized (snapshotIds) {
                    snapshotIds.add(new long[] {store.snapshotNow()});
                    snapshotModels.add(model.copy());
                }
            }
        }
    }

    private static String diff(java.util.function.Function<String, Table> tables, Model model) {
        for (var e : model.tables.entrySet()) {
            Table table = tables.apply(e.getKey());
            TreeMap<String, byte[]> m = e.getValue();
            for (int k = 0; k < KEYS; k += 7) {
                byte[] want = m.get(new String(key(k), StandardCharsets.UTF_8));
                byte[] got = table.get(key(k));
                if (!Arrays.equals(want, got)) return e.getKey() + "/" + k + ": want " + (want == null ? "absent" : want.length + " bytes")
                        + ", got " + (got == null ? "absent" : got.length + " bytes");
            }
            try (Cursor c = table.scan(null, null)) {
                var it = m.entrySet().iterator();
                while (c.next()) {
                    if (!it.hasNext()) return e.getKey() + ": scan returned an extra key";
                    var x = it.next();
                    if (!x.getKey().equals(new String(c.key(), StandardCharsets.UTF_8)) || !Arrays.equals(x.getValue(), c.value()))
                        return e.getKey() + ": scan differs at " + x.getKey();
                }
                if (it.hasNext()) return e.getKey() + ": scan ended early";
            }
        }
        return null;
    }

    @ParameterizedTest
    @EnumSource(RecoveryMode.class)
    void dataSetSeveralTimesTheRegionMatchesItsModelLiveAsOfSnapshotsAfterACrashAndOnDisk(RecoveryMode mode) throws Exception {
        List<Model> models = new ArrayList<>();
        for (int w = 0; w < WRITERS; w++) {
            Map<String, TreeMap<String, byte[]>> m = new HashMap<>();
            for (int t = 0; t < TABLES_PER_WRITER; t++) m.put(table(w, t), new TreeMap<>());
            models.add(new Model(m));
        }
        List<long[]> snapshotIds = new ArrayList<>();
        List<Model> snapshotModels = new ArrayList<>();
        Varve store = Varve.open(config(mode));
        ExecutorService pool = Executors.newFixedThreadPool(WRITERS);
        try {
            for (int w = 0; w < WRITERS; w++) for (int t = 0; t < TABLES_PER_WRITER; t++) store.table(table(w, t));
            List<Future<?>> writers = new ArrayList<>();
            for (int w = 0; w < WRITERS; w++) {
                int writer = w;
                writers.add(pool.submit(() -> write(store, writer, models.get(writer), snapshotIds, snapshotModels)));
            }
            for (Future<?> f : writers) f.get();
        } finally {
            pool.shutdownNow();
        }
        VarveMetrics m = store.metrics();
        assertTrue(m.pagesEvicted() > 0 && m.pagesRead() > 0, "the data set must not fit the region: " + m);
        for (Model model : models) assertNull(diff(store::table, model), "live");
        List<Long> live = store.snapshots().stream().map(SnapshotInfo::id).toList();
        int checked = 0;
        for (int i = 0; i < snapshotIds.size(); i++) {
            long id = snapshotIds.get(i)[0];
            if (!live.contains(id)) continue;
            Model want = snapshotModels.get(i);
            try (SnapshotView past = store.asOf(id)) {
                assertNull(diff(past::table, want), "as of snapshot " + id);
            }
            checked++;
        }
        assertTrue(checked > 0, "no snapshot left to read: " + live);
        store.halt();

        try (Varve again = Varve.open(config(mode))) {
            for (Model model : models) assertNull(diff(again::table, model), "after the crash");
        }
        try (Varve again = Varve.open(config(mode))) {
            for (Model model : models) assertNull(diff(again::table, model), "after a clean close");
        }
        assertEquals(List.of(), nonZeroUnusedRanges(), "pages whose unused range SKIP_GARBAGE leaves out holds data");
    }

    /** Every page of every page file whose {@link PageLayout#unusedRange} is not all zeros. */
    private List<String> nonZeroUnusedRanges() throws IOException {
        List<String> bad = new ArrayList<>();
        int pageSize = 4096;
        ByteBuffer buf = ByteBuffer.allocateDirect(pageSize);
        try (Stream<Path> files = Files.list(dir.resolve("pages"))) {
            for (Path f : files.sorted().toList()) {
                try (FileChannel ch = FileChannel.open(f)) {
                    for (long at = pageSize; at + pageSize <= ch.size(); at += pageSize) {
                        buf.clear();
                        while (buf.hasRemaining() && ch.read(buf, at + buf.position()) > 0) {
                        }
                        Page page = new Page(buf, 0, pageSize);
                        long range = PageLayout.unusedRange(page);
                        for (int i = PageLayout.rangeStart(range); i < PageLayout.rangeEnd(range); i++) {
                            if (buf.get(i) != 0) {
                                bad.add(f.getFileName() + " page " + (at / pageSize - 1) + " type " + page.type() + " byte " + i);
                                break;
                            }
                        }
                    }
                }
            }
        }
        return bad;
    }
}
