package dev.varve.engine;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.RecoveryCompression;
import dev.varve.config.RecoveryMode;
import dev.varve.config.Retention;
import dev.varve.config.VarveConfig;
import dev.varve.config.WalSyncMode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.zip.CRC32C;

/**
 * Store directories for tests of tools (read-only open, the {@code varve} command line), written by a child JVM
 * ({@code main(dir, kind)}) so that a crash is a real process death: {@code healthy} writes {@link #ROUNDS} rounds,
 * declaring a snapshot of rank 1, 2, 3, 1, ... after each (so the archive holds all three rank levels) with a
 * checkpoint between, and closes; {@code crashed} then writes one more round and halts the JVM (the WAL holds
 * records to replay); {@code midcheckpoint} writes that round and halts the JVM just before the checkpoint's end
 * marker (its recovery files and pages written: binary restore pending). Round {@code r} is a pure function of
 * {@code r}: {@link #model} rebuilds the tables after any number of rounds, and snapshot {@code i} (oldest first)
 * holds {@code model(i + 1)}.
 */
public final class FixtureStores {
    public static final String[] TABLES = {"orders", "accounts"};
    public static final int ROUNDS = 6;
    public static final int LEVELS = 3;
    /** Exit code of a child that halted where it was told to. */
    public static final int HALTED = 9;

    private FixtureStores() {
    }

    /** The configuration the fixture writes with: recovery files, three rank levels kept whole, explicit checkpoints. */
    public static VarveConfig config(Path dir) {
        Retention[] keep = {Retention.keepAll(), Retention.keepAll(), Retention.keepAll()};
        return VarveConfig.builder().path(dir).dataRegionSize(64L << 20).partitions(3).recoveryMode(RecoveryMode.CHECKPOINT_RECOVERY_FILE)
                .recoveryCompression(RecoveryCompression.SKIP_GARBAGE).walSyncMode(WalSyncMode.LOG_ONLY).walSegmentSize(4L << 20)
                .checkpointFrequency(Duration.ofHours(1)).checkpointBufferSize(1L << 20).captureBufferSize(1L << 20)
                .archiveSegmentSize(256L << 10).snapshotPageWindow(2).retention(RankTreePolicy.levels(keep)).build();
    }

    /** The key/value pairs of round {@code r} (a value of null removes). */
    static Map<String, Map<String, byte[]>> round(int r) {
        Map<String, Map<String, byte[]>> out = new HashMap<>();
        for (String t : TABLES) {
            Map<String, byte[]> m = new TreeMap<>();
            for (int j = 0; j < 120; j++) {
                int k = (r * 37 + j * 11 + t.length()) % 400;
                String key = String.format("key-%04d", k);
                if (r > 0 && j % 17 == 0) m.put(key, null);
                else m.put(key, (t + ":" + key + ":round " + r + ":" + "x".repeat((k * 7 + r) % 300)).getBytes(StandardCharsets.UTF_8));
            }
            out.put(t, m);
        }
        return out;
    }

    /** Tables after rounds [0, n), keys as strings. */
    public static Map<String, TreeMap<String, byte[]>> model(int n) {
        Map<String, TreeMap<String, byte[]>> m = new HashMap<>();
        for (String t : TABLES) m.put(t, new TreeMap<>());
        for (int r = 0; r < n; r++) {
            round(r).forEach((t, kv) -> kv.forEach((k, v) -> {
                if (v == null) m.get(t).remove(k);
                else m.get(t).put(k, v);
            }));
        }
        return m;
    }

    static void write(Varve store, int r) {
        Map<String, Map<String, byte[]>> kv = round(r);
        store.write(b -> kv.forEach((t, m) -> m.forEach((k, v) -> {
            byte[] key = k.getBytes(StandardCharsets.UTF_8);
            if (v == null) b.remove(t, key);
            else b.put(t, key, v);
        })));
    }

    /** Writes the fixture's rounds, snapshots and checkpoints into an open store. */
    static void populate(Varve store) {
        for (int r = 0; r < ROUNDS; r++) {
            write(store, r);
            store.snapshotNow(1 + r % LEVELS);
            store.checkpoint().join();
        }
    }

    /**
     * The stores made in this JVM, by kind: each kind is written once by a child JVM, and every {@link #create} copies
     * it (a dozen test classes of the command line ask for the same three, each child JVM a second or two). Guarded by
     * itself; deleted when the JVM exits.
     */
    private static final Map<String, Path> MADE = new HashMap<>();
    private static Path madeRoot;

    /**
     * Puts a store of {@code kind} ("healthy", "crashed", "midcheckpoint") at {@code dir}, as a child JVM running
     * {@link #main} on it leaves it (a copy of the one this JVM's first call for the kind had written so); returns the
     * child's exit code.
     */
    public static int create(Path dir, String kind) {
        int want = kind.equals("healthy") ? 0 : HALTED;
        try {
            Path made;
            synchronized (MADE) {
                made = MADE.get(kind);
                if (made == null) {
                    if (madeRoot == null) {
                        madeRoot = Files.createTempDirectory("varve-fixture-stores");
                        Path root = madeRoot;
                        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                            try {
                                LogCompactionPowerCutTest.deleteTree(root);
                            } catch (IOException e) {
                                // a temporary directory left behind
                            }
                        }));
                    }
                    made = madeRoot.resolve(kind);
                    FixtureChildJvm.Result r = FixtureChildJvm.run("-Xmx256m", 120, FixtureStores.class, made.toString(), kind);
                    if (r.exitCode() != want) throw new IllegalStateException("fixture " + kind + ": " + r.describe());
                    MADE.put(kind, made);
                }
            }
            LogCompactionPowerCutTest.copy(made, dir);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return want;
    }

    /**
     * Makes the B+tree of page file {@code pageFile} one of format {@code version}, as another release would have
     * written it: its meta page (index 0, after the file's header page of {@code pageSize} bytes) with that version
     * and its CRC made right again (every byte but the 4-byte field at offset 8, as PageChecksum computes it).
     */
    public static void setTreeFormatVersion(Path pageFile, int pageSize, int version) throws IOException {
        try (RandomAccessFile f = new RandomAccessFile(pageFile.toFile(), "rw")) {
            byte[] page = new byte[pageSize];
            f.seek(pageSize);
            f.readFully(page);
            ByteBuffer b = ByteBuffer.wrap(page).order(ByteOrder.LITTLE_ENDIAN);
            if (b.get(12) != 1) throw new IllegalStateException("no meta page at index 0 of " + pageFile); // PageHeader.TYPE_OFFSET, TYPE_META
            b.putInt(32 + 4, version); // MetaPage.VERSION_OFFSET
            CRC32C crc = new CRC32C();
            crc.update(page, 0, 8);
            crc.update(page, 12, pageSize - 12);
            b.putInt(8, (int) crc.getValue());
            f.seek(pageSize);
            f.write(page);
        }
    }

    public static void main(String[] args) throws IOException {
        Path dir = Path.of(args[0]);
        String kind = args[1];
        NoEndMarker haltAtEndMarker = new NoEndMarker(HALTED);
        Varve store = Varve.open(config(dir), haltAtEndMarker);
        populate(store);
        switch (kind) {
            case "healthy":
                store.close();
                return;
            case "crashed":
                write(store, ROUNDS);
                Runtime.getRuntime().halt(HALTED);
                return;
            case "midcheckpoint":
                write(store, ROUNDS);
                haltAtEndMarker.armed = true;
                store.checkpoint().join();
                throw new IllegalStateException("the checkpoint finished without writing its end marker");
            default:
                throw new IllegalArgumentException("kind must be healthy, crashed or midcheckpoint, was " + kind);
        }
    }
}
