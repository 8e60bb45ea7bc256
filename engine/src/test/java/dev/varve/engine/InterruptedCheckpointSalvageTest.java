package dev.varve.engine;

import static dev.varve.engine.FixtureSupport.assertSameFiles;
import static dev.varve.engine.FixtureSupport.bytes;
import static dev.varve.engine.FixtureSupport.filesUnder;
import static dev.varve.engine.FixtureSupport.newModel;
import static dev.varve.engine.FixtureSupport.show;
import static dev.varve.engine.FixtureSupport.utf8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.config.RecoveryCompression;
import dev.varve.config.RecoveryMode;
import dev.varve.config.VarveConfig;
import dev.varve.core.io.FaultyFileIOFactory;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Salvage of a store that crashed while a checkpoint wrote its pages and then does not open (its WAL is damaged where
 * recovery needs it): the page files are half-updated — some pages at the checkpoint's mark, one torn, the rest as the
 * checkpoint before left them — and the salvage must read them as recovery would have restored them. Before the fix
 * it read them as they were and lost entries written long before the crash (a torn leaf's, or the half a split moved
 * to a page not yet written). A checkpoint protected by physical WAL records cannot be restored without the WAL:
 * salvage says so and serves no value that was never written.
 */
@Timeout(300)
class InterruptedCheckpointSalvageTest {
    private static final int KEYS = 1200;
    private static final String TABLE = "t";
    private static final int WAL_CHECKPOINT_STARTED = 12;

    @TempDir
    Path dir;

    private VarveConfig config(RecoveryMode mode, RecoveryCompression compression) {
        return FixtureSupport.small(dir).partitions(2).recoveryMode(mode).recoveryCompression(compression).build();
    }

    private static byte[] key(int i) {
        return utf8(String.format("key-%06d", i));
    }

    private static byte[] first(int i) {
        return bytes(i, 100 + i % 200);
    }

    private static byte[] second(int i) {
        return bytes(1_000_000L + i, 60 + i % 250);
    }

    /**
     * Every entry as of the interrupted checkpoint's mark — the completed checkpoint's entries (a third of them
     * overwritten since) and as many new keys, which split leaves of every partition — is salvaged with its value,
     * after a process kill (the page write in flight torn, those before it whole) or a power cut (un-fsynced page
     * writes dropped, kept or torn), at several page writes of the checkpoint. A checkpoint that makes fewer page
     * writes than asked is crashed at its first page fsync instead ({@link CrashPoints#pageWriteAfterStartMarker}; page
     * write 8 here): every page then reached its file whole and the page files alone would do, but the restore must
     * not spoil them.
     */
    @ParameterizedTest(name = "{0} at page write {1}, {2}")
    @CsvSource({"kill, 1, SKIP_GARBAGE", "kill, 3, SNAPPY", "kill, 8, SKIP_GARBAGE", "power cut, 2, SNAPPY", "power cut, 6, SKIP_GARBAGE"})
    void everyEntryOfTheInterruptedCheckpointsMarkIsSalvaged(String crash, int pageWrite, RecoveryCompression compression) throws Exception {
        VarveConfig config = config(RecoveryMode.CHECKPOINT_RECOVERY_FILE, compression);
        TreeMap<byte[], byte[]> atMark = crashMidCheckpoint(config, pageWrite, crash.equals("power cut"));
        Salvaged s = salvageUnopenable(config);

        for (byte[] k : s.twice) throw new AssertionError("two values salvaged for " + show(k));
        for (var e : atMark.entrySet()) {
            assertTrue(s.entries.containsKey(e.getKey()), "lost " + show(e.getKey()) + "; losses reported: " + s.lost);
            assertArrayEquals(e.getValue(), s.entries.get(e.getKey()), "value of " + show(e.getKey()));
        }
        for (byte[] k : s.entries.keySet()) assertTrue(atMark.containsKey(k), "salvaged a key never written: " + show(k));
        // restored, the page files hold that mark whole: the only loss is the WAL that could not be replayed
        assertEquals(1, s.lost.size(), "losses: " + s.lost);
        assertTrue(s.lost.get(0).startsWith(dir.resolve("wal") + " @0: writes logged after the last checkpoint")
                && s.lost.get(0).contains("page images were restored from its recovery files"), s.lost.get(0));
    }

    /** A damaged recovery file is reported with its file and offset, and none of its bytes become an entry. */
    @Test
    void aDamagedRecoveryFileIsReportedAndNotServed() throws Exception {
        VarveConfig config = config(RecoveryMode.CHECKPOINT_RECOVERY_FILE, RecoveryCompression.SKIP_GARBAGE);
        TreeMap<byte[], byte[]> atMark = crashMidCheckpoint(config, 1, false);
        Path recoveryFile;
        try (var l = Files.list(dir.resolve("checkpoints"))) {
            recoveryFile = l.filter(p -> p.getFileName().toString().contains("-recovery-")).findFirst().orElseThrow();
        }
        long damageAt = Files.size(recoveryFile) / 2;
        FixtureSupport.flipByte(recoveryFile, damageAt);
        Salvaged s = salvageUnopenable(config);

        assertTrue(s.lost.stream().anyMatch(l -> l.startsWith(recoveryFile + " @") && l.contains("recovery file entry checksum mismatch")),
                "the damaged recovery file is reported: " + s.lost);
        assertServedOnlyWrittenValues(s, atMark);
    }

    /**
     * WAL_PHYSICAL: the interrupted checkpoint's pages are restored from physical WAL records, which salvage does not
     * replay from a WAL that keeps the store from opening. It says so, naming the checkpoint's start marker, and every
     * value it serves is one the key held at the completed checkpoint or at the interrupted one's mark.
     */
    @Test
    void physicalWalModeReportsTheInterruptedCheckpointAndInventsNothing() throws Exception {
        VarveConfig config = config(RecoveryMode.WAL_PHYSICAL, RecoveryCompression.SNAPPY);
        TreeMap<byte[], byte[]> atMark = crashMidCheckpoint(config, 1, false);
        Salvaged s = salvageUnopenable(config);

        assertTrue(s.lost.stream().anyMatch(l -> l.matches("\\Q" + dir.resolve("checkpoints") + "\\E/cp-\\d+-start\\.bin @0: checkpoint \\d+ was "
                + "interrupted while writing pages.*physical WAL records.*")), "the unrestored checkpoint is reported: " + s.lost);
        assertServedOnlyWrittenValues(s, atMark);
    }

    /**
     * Every value handed over is one its key was written with, in the first round or the second: a page as the
     * completed checkpoint left it may be served, a value never written may not.
     */
    private static void assertServedOnlyWrittenValues(Salvaged s, TreeMap<byte[], byte[]> atMark) {
        for (byte[][] e : s.handed) {
            assertTrue(atMark.containsKey(e[0]), "salvaged a key never written: " + show(e[0]));
            int i = Integer.parseInt(new String(e[0], StandardCharsets.UTF_8).substring(4));
            assertTrue(Arrays.equals(e[1], first(i)) || Arrays.equals(e[1], second(i)), "salvaged a value never written for " + show(e[0]));
        }
    }

    /**
     * Writes {@value #KEYS} keys and checkpoints; overwrites every third and adds as many new keys; then crashes the
     * next checkpoint at its {@code pageWrite}-th page write (a power cut on top when asked) and damages the WAL's
     * last record — the checkpoint-started record of the crashed checkpoint — so that the store does not open.
     * Returns the table as of the crashed checkpoint's mark.
     */
    private TreeMap<byte[], byte[]> crashMidCheckpoint(VarveConfig config, int pageWrite, boolean powerCut) throws Exception {
        TreeMap<byte[], byte[]> model = newModel();
        FaultyFileIOFactory io = new FaultyFileIOFactory(pageWrite * 31L + (powerCut ? 1 : 0));
        Varve store = Varve.open(config, io);
        Table t = store.table(TABLE);
        for (int i = 0; i < KEYS; i++) put(t, model, i, first(i));
        store.checkpoint().get(60, TimeUnit.SECONDS);
        for (int i = 0; i < KEYS; i += 3) put(t, model, i, second(i));
        for (int i = KEYS; i < 2 * KEYS; i++) put(t, model, i, second(i));
        io.crashAt(CrashPoints.pageWriteAfterStartMarker(pageWrite));
        assertThrows(ExecutionException.class, () -> store.checkpoint().get(60, TimeUnit.SECONDS));
        assertNotNull(io.crashedAt(), "the checkpoint failed without the injected crash");
        store.halt();
        if (powerCut) io.powerLoss();

        List<FixtureSupport.WalRecord> records = FixtureSupport.walRecords(dir);
        FixtureSupport.WalRecord last = records.get(records.size() - 1);
        assertEquals(WAL_CHECKPOINT_STARTED, last.type(), "the crashed checkpoint's started record ends the WAL");
        FixtureSupport.flipWalRecordByte(last, 20); // a whole record that fails its CRC: damage under LOG_ONLY
        return model;
    }

    private static void put(Table t, TreeMap<byte[], byte[]> model, int i, byte[] value) {
        t.put(key(i), value);
        model.put(key(i), value);
    }

    /**
     * What salvage handed over: the table's entries (the last value of a key handed over more than once), every
     * entry as handed over, the keys handed over twice, and each loss as "file @offset: what".
     */
    private record Salvaged(TreeMap<byte[], byte[]> entries, List<byte[][]> handed, List<byte[]> twice, List<String> lost) {
    }

    /** Salvages the store, which must not open, and checks that not one byte of it changed. */
    private Salvaged salvageUnopenable(VarveConfig config) throws IOException {
        Map<Path, byte[]> before = filesUnder(dir);
        Salvaged s = new Salvaged(newModel(), new ArrayList<>(), new ArrayList<>(), new ArrayList<>());
        StoreSalvager.Result r = StoreSalvager.salvage(config, new StoreSalvager.Sink() {
            @Override
            public void table(String name, TableOptions options) {
            }

            @Override
            public void entry(String table, int partition, byte[] key, byte[] value) {
                if (!table.equals(TABLE)) throw new AssertionError("entry of table " + table);
                s.handed.add(new byte[][]{key, value});
                if (s.entries.put(key, value) != null) s.twice.add(key);
            }

            @Override
            public void lost(Path file, long offset, String what) {
                s.lost.add(file + " @" + offset + ": " + what);
            }
        });
        assertFalse(r.opened(), "the damaged WAL should keep the store from opening");
        assertSameFiles(before, filesUnder(dir));
        return s;
    }
}
