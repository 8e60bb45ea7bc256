package dev.varve.engine;

import dev.varve.config.RecoveryCompression;
import dev.varve.config.RecoveryMode;
import dev.varve.config.VarveConfig;
import dev.varve.config.WalSyncMode;
import dev.varve.core.io.UnforcedFileIOFactory;

import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;

/**
 * The workload of the kill -9 tests: batch {@code i} is a pure function of (seed, i), so the parent can rebuild the
 * expected state of any prefix of batches. Run as a child JVM: {@code main(dir, mode, firstBatch, ackFile[, walSyncMode[,
 * PRESSURE | recoveryCompression]])} applies batches forever and appends each acknowledged batch number to the ack
 * file (one write() per line, which survives the kill).
 */
final class KillWorkload {
    static final long SEED = 99;
    static final String[] TABLES = {"orders", "accounts"};
    static final int KEYS = 600;

    record Op(String table, byte[] key, byte[] value) {
    }

    /**
     * What the batches write and into what store: {@link #NORMAL} fits its 16 MiB region; {@link #PRESSURE} grows
     * to several times its 8 MiB region (values up to 4 KiB, one in 40 of 10-40 KiB, one in 600 of 1 MiB — an
     * overflow chain longer than its 256 KiB checkpoint buffer), so pages are evicted and read back, and writers
     * wait for copy-on-write slots, while the child is killed. {@link #FREEING} keeps 40 keys a table in its 8 MiB
     * region, a third of its values 1 MiB, in batches of at most two operations and one 1 MiB value: most batches
     * remove or replace 1 MiB values, freeing their overflow chains (the most one batch frees fits the region).
     */
    record Shape(int keys, int smallMax, int hugeEvery, long regionBytes, long checkpointBufferBytes, int maxOps, boolean oneHuge) {
    }

    static final Shape NORMAL = new Shape(KEYS, 400, 0, 16L << 20, 1L << 20, 6, false);
    static final Shape PRESSURE = new Shape(4000, 4096, 600, 8L << 20, 256L << 10, 6, false);
    static final Shape FREEING = new Shape(40, 4096, 3, 8L << 20, 256L << 10, 2, true);

    private KillWorkload() {
    }

    static VarveConfig config(Path dir, RecoveryMode mode) {
        return config(dir, mode, WalSyncMode.LOG_ONLY);
    }

    static VarveConfig config(Path dir, RecoveryMode mode, WalSyncMode sync) {
        return config(NORMAL, dir, mode, sync, defaultCompression(mode));
    }

    static VarveConfig config(Path dir, RecoveryMode mode, WalSyncMode sync, RecoveryCompression compression) {
        return config(NORMAL, dir, mode, sync, compression);
    }

    static VarveConfig config(Shape shape, Path dir, RecoveryMode mode, WalSyncMode sync) {
        return config(shape, dir, mode, sync, defaultCompression(mode));
    }

    private static RecoveryCompression defaultCompression(RecoveryMode mode) {
        return mode == RecoveryMode.CHECKPOINT_RECOVERY_FILE ? RecoveryCompression.SKIP_GARBAGE : RecoveryCompression.DISABLED;
    }

    static VarveConfig config(Shape shape, Path dir, RecoveryMode mode, WalSyncMode sync, RecoveryCompression compression) {
        return VarveConfig.builder().path(dir).dataRegionSize(shape.regionBytes()).partitions(3).recoveryMode(mode)
                .recoveryCompression(compression)
                .walSyncMode(sync).walSegmentSize(4L << 20).checkpointFrequency(Duration.ofMillis(100))
                .checkpointBufferSize(shape.checkpointBufferBytes()).captureBufferSize(1L << 20).build();
    }

    static List<Op> batch(long i) {
        return batch(NORMAL, i);
    }

    static List<Op> batch(Shape shape, long i) {
        Random r = new Random(SEED * 1_000_003L + i);
        int n = 1 + r.nextInt(shape.maxOps());
        List<Op> ops = new ArrayList<>(n);
        boolean huge = false;
        for (int j = 0; j < n; j++) {
            String t = TABLES[r.nextInt(TABLES.length)];
            byte[] k = ("k" + r.nextInt(shape.keys())).getBytes(StandardCharsets.UTF_8);
            if (r.nextInt(5) == 0) {
                ops.add(new Op(t, k, null));
                continue;
            }
            int length = r.nextInt(40) == 0 ? 10_000 + r.nextInt(30_000) : r.nextInt(shape.smallMax());
            if (shape.hugeEvery() > 0 && r.nextInt(shape.hugeEvery()) == 0 && !(shape.oneHuge() && huge)) {
                length = 1 << 20;
                huge = true;
            }
            byte[] v = new byte[length];
            r.nextBytes(v);
            ops.add(new Op(t, k, v));
        }
        return ops;
    }

    /** Expected tables after batches [0, n). */
    static Map<String, TreeMap<String, byte[]>> model(long n) {
        return model(NORMAL, n);
    }

    static Map<String, TreeMap<String, byte[]>> model(Shape shape, long n) {
        Map<String, TreeMap<String, byte[]>> m = new HashMap<>();
        for (String t : TABLES) m.put(t, new TreeMap<>());
        for (long i = 0; i < n; i++) {
            for (Op op : batch(shape, i)) {
                String k = new String(op.key(), StandardCharsets.UTF_8);
                if (op.value() == null) m.get(op.table()).remove(k);
                else m.get(op.table()).put(k, op.value());
            }
        }
        return m;
    }

    /**
     * The batches a store reopened after a kill holds: the {@code acked} the child acknowledged, or one more (the one
     * in flight when it died, whole); any other state fails, naming {@code where} and the first difference.
     */
    static long recoveredBatches(Shape shape, Varve store, long acked, String where) {
        String d = diff(shape, store::table, model(shape, acked));
        if (d == null) return acked;
        if (diff(shape, store::table, model(shape, acked + 1)) != null)
            throw new AssertionError(where + ": the state matches neither " + acked + " nor " + (acked + 1) + " batches: " + d);
        return acked + 1;
    }

    /** Null when the store holds exactly the model, else the first difference. */
    static String diff(Varve store, Map<String, TreeMap<String, byte[]>> model) {
        return diff(store::table, model);
    }

    /** Null when the tables (current, or as of a snapshot) hold exactly the model, else the first difference. */
    static String diff(java.util.function.Function<String, Table> tables, Map<String, TreeMap<String, byte[]>> model) {
        return diff(NORMAL, tables, model);
    }

    static String diff(Shape shape, java.util.function.Function<String, Table> tables, Map<String, TreeMap<String, byte[]>> model) {
        for (String t : TABLES) {
            TreeMap<String, byte[]> m = model.get(t);
            Table table;
            try {
                table = tables.apply(t);
            } catch (IllegalArgumentException noSuchTable) {
                // a read-only store or a view has no table that only removes ever named (a remove creates none)
                if (m.isEmpty()) continue;
                return t + ": no such table, want " + m.size() + " keys (" + noSuchTable.getMessage() + ")";
            }
            for (int k = 0; k < shape.keys(); k++) {
                byte[] key = ("k" + k).getBytes(StandardCharsets.UTF_8);
                byte[] want = m.get("k" + k);
                byte[] got = table.get(key);
                if (!Arrays.equals(want, got)) return t + "/k" + k + ": want " + (want == null ? "absent" : want.length + " bytes")
                        + ", got " + (got == null ? "absent" : got.length + " bytes");
            }
            try (Cursor c = table.scan(null, null)) {
                var it = m.entrySet().iterator();
                while (c.next()) {
                    if (!it.hasNext()) return t + ": scan returned extra key " + new String(c.key(), StandardCharsets.UTF_8);
                    var e = it.next();
                    if (!e.getKey().equals(new String(c.key(), StandardCharsets.UTF_8)) || !Arrays.equals(e.getValue(), c.value()))
                        return t + ": scan differs at " + e.getKey();
                }
                if (it.hasNext()) return t + ": scan ended early";
            }
        }
        return null;
    }

    /** Highest acknowledged batch + 1, or -1. */
    static long acknowledged(Path ack) throws IOException {
        if (!Files.exists(ack)) return -1;
        long last = -1;
        for (String line : Files.readAllLines(ack)) {
            line = line.trim();
            if (!line.isEmpty()) last = Math.max(last, Long.parseLong(line) + 1);
        }
        return last;
    }

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[0]);
        RecoveryMode mode = RecoveryMode.valueOf(args[1]);
        long from = Long.parseLong(args[2]);
        WalSyncMode sync = args.length > 4 ? WalSyncMode.valueOf(args[4]) : WalSyncMode.LOG_ONLY;
        // the sixth argument, when given: PRESSURE or FREEING (the small region's shapes), or a recoveryCompression
        Shape shape = args.length > 5 && args[5].equals("PRESSURE") ? PRESSURE : args.length > 5 && args[5].equals("FREEING") ? FREEING : NORMAL;
        RecoveryCompression compression = args.length > 5 && shape == NORMAL ? RecoveryCompression.valueOf(args[5]) : defaultCompression(mode);
        try (Varve store = Varve.open(config(shape, dir, mode, sync, compression), UnforcedFileIOFactory.INSTANCE); FileOutputStream ack = new FileOutputStream(args[3], true)) {
            ack.write(((from - 1) + "\n").getBytes(StandardCharsets.UTF_8));
            for (long i = from; ; i++) {
                List<Op> ops = batch(shape, i);
                store.write(b -> {
                    for (Op op : ops) {
                        if (op.value() == null) b.remove(op.table(), op.key());
                        else b.put(op.table(), op.key(), op.value());
                    }
                });
                ack.write((i + "\n").getBytes(StandardCharsets.UTF_8));
            }
        }
    }
}
