package dev.varve.engine;

import dev.varve.config.RecoveryCompression;
import dev.varve.config.RecoveryMode;
import dev.varve.config.VarveConfig;
import dev.varve.config.WalSyncMode;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * IEP-113 recovery files under memory pressure, in each compression: a data set several times the 8 MiB region,
 * written while a checkpoint's page write fails half-way through (after its recovery files and start marker, the
 * file-IO fault seam); the store goes on answering from pages evicted and read back; then the process dies, the next
 * open dies too after restoring part of the checkpoint from its recovery files, and a third open must hold every
 * acknowledged write, byte for byte (and the write that failed, if one did, whole or not at all).
 */
@Timeout(600) // a case once took 121 s, a wait in page memory running to its limit after the injected failure (likely the one FailedCheckpointSlotWaitTest now ends at once)
class RecoveryFileUnderPressureTest {
    private static final int KEYS = 4000;

    @TempDir
    Path dir;

    private VarveConfig config(RecoveryCompression c) {
        return VarveConfig.builder().path(dir).dataRegionSize(8L << 20).partitions(4).recoveryMode(RecoveryMode.CHECKPOINT_RECOVERY_FILE)
                .recoveryCompression(c).walSyncMode(WalSyncMode.LOG_ONLY).walSegmentSize(8L << 20)
                .checkpointFrequency(Duration.ofMillis(100)).checkpointBufferSize(256L << 10).captureBufferSize(1L << 20).build();
    }

    private static byte[] key(int k) {
        return String.format("key-%06d", k).getBytes(StandardCharsets.UTF_8);
    }

    private static byte[] value(SplittableRandom r) {
        int kind = r.nextInt(300);
        byte[] v = new byte[kind == 0 ? 1 << 20 : kind < 10 ? 5000 + r.nextInt(20_000) : r.nextInt(3000)];
        for (int i = 0; i < v.length; i += 16) v[i] = (byte) r.nextInt();
        return v;
    }

    /** The write in flight when one failed: its key, the value before and the one it wrote (null: removed or absent). */
    private record InDoubt(int key, byte[] before, byte[] after) {
    }

    /**
     * Puts and removes {@code ops} times into table "t" and {@code model}; a write that throws leaves the model as it
     * was and is rethrown with what it tried in {@code inDoubt}.
     */
    private static void write(Varve store, TreeMap<Integer, byte[]> model, SplittableRandom r, int ops, InDoubt[] inDoubt) {
        Table t = store.table("t");
        for (int i = 0; i < ops; i++) {
            int k = r.nextInt(KEYS);
            byte[] v = r.nextInt(5) == 0 ? null : value(r);
            inDoubt[0] = new InDoubt(k, model.get(k), v);
            if (v == null) t.remove(key(k));
            else t.put(key(k), v);
            if (v == null) model.remove(k);
            else model.put(k, v);
            inDoubt[0] = null;
        }
    }

    private static void check(Varve store, TreeMap<Integer, byte[]> model, String when) {
        Table t = store.table("t");
        for (int k = 0; k < KEYS; k++) assertArrayEquals(model.get(k), t.get(key(k)), when + ": key " + k);
        int n = 0;
        try (Cursor c = t.scan(null, null)) {
            while (c.next()) n++;
        }
        assertEquals(model.size(), n, when + ": scan");
    }

    @ParameterizedTest
    @EnumSource(RecoveryCompression.class)
    void pageWriteFailureThenDeathDuringRestoreKeepsEveryAcknowledgedWrite(RecoveryCompression c) throws Exception {
        TreeMap<Integer, byte[]> model = new TreeMap<>();
        SplittableRandom r = new SplittableRandom(c.ordinal() + 11);
        AtomicBoolean armed = new AtomicBoolean();
        AtomicInteger pageWrites = new AtomicInteger();
        HookedFileIOFactory failing = new HookedFileIOFactory((op, file) -> {
            if (armed.get() && op == HookedFileIOFactory.Op.WRITE && file.toString().endsWith(".page") && pageWrites.incrementAndGet() == 40)
                throw new IOException("injected: page write fails");
        });
        Varve store = Varve.open(config(c), failing);
        InDoubt[] inDoubt = new InDoubt[1];
        write(store, model, r, 6000, inDoubt);
        assertTrue(store.metrics().pagesEvicted() > 0, "the data set must outgrow the region");
        armed.set(true);
        try {
            // writes go on until the region, which no checkpoint cleans any more, refuses them with the checkpoint's failure
            for (int round = 0; round < 40; round++) write(store, model, r, 100, inDoubt);
        } catch (RuntimeException expected) {
            // refused for want of room (before it was logged), or it failed reading a page of a file whose write
            // failed (after it was logged): either way in doubt, the README says, and whole or absent after reopen
        }
        assertTrue(pageWrites.get() >= 40, "no checkpoint wrote pages after the fault was armed");
        TreeMap<Integer, byte[]> acknowledged = new TreeMap<>(model);
        store.halt();

        AtomicInteger restoreWrites = new AtomicInteger();
        HookedFileIOFactory dying = new HookedFileIOFactory((op, file) -> {
            if (op == HookedFileIOFactory.Op.WRITE && file.toString().endsWith(".page") && restoreWrites.incrementAndGet() > 20)
                throw new IOException("injected: the process dies while restoring");
        });
        try {
            Varve.open(config(c), dying).close();
        } catch (RuntimeException expected) {
            // died during recovery, as planned (or the crash left nothing to restore past 20 writes)
        }
        try (Varve again = Varve.open(config(c))) {
            InDoubt d = inDoubt[0];
            if (d != null) {
                byte[] got = again.table("t").get(key(d.key()));
                assertTrue(Arrays.equals(got, d.before()) || Arrays.equals(got, d.after()), "the write in doubt is whole or absent");
                if (got == null) acknowledged.remove(d.key());
                else acknowledged.put(d.key(), got);
            }
            check(again, acknowledged, "after the restore");
        }
    }
}
