package dev.varve.engine;

import static dev.varve.engine.FixtureSupport.assertTableHolds;
import static dev.varve.engine.FixtureSupport.bytes;
import static dev.varve.engine.FixtureSupport.newModel;
import static dev.varve.engine.FixtureSupport.utf8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link Varve#batchFitsDataRegion} answers as {@code write} decides: in the least region (8 MiB of 4 KiB pages), the
 * largest batch it says fits is written whole, and one operation more is refused naming {@code dataRegionSize} and
 * changes nothing — with small values, where the operations are the bound, and large ones, where the bytes are.
 */
@Timeout(120)
class BatchFitsDataRegionTest {
    @TempDir
    Path dir;

    @ParameterizedTest
    @ValueSource(ints = {100, 256 << 10}) // 256 KiB: a batch of them outgrows the region well before the WAL record limit
    void theLargestBatchItAcceptsIsWrittenAndOneMoreIsRefused(int valueBytes) {
        try (Varve store = Varve.open(FixtureSupport.small(dir).build())) {
            Table t = store.table("t");
            byte[] value = bytes(valueBytes, valueBytes);
            int keyBytes = utf8("k000").length;
            int fits = 1;
            while (store.batchFitsDataRegion(fits + 1, (fits + 1L) * (keyBytes + valueBytes))) fits++;
            assertFalse(store.batchFitsDataRegion(fits + 1, (fits + 1L) * (keyBytes + valueBytes)));
            TreeMap<byte[], byte[]> model = newModel();
            int n = fits;
            store.write(b -> {
                for (int i = 0; i < n; i++) b.put("t", utf8(String.format("k%03d", i)), value);
            });
            for (int i = 0; i < n; i++) model.put(utf8(String.format("k%03d", i)), value);
            assertTableHolds(t, model, "the largest batch that fits");
            FixtureSupport.rejected(store, IllegalArgumentException.class, () -> store.write(b -> {
                for (int i = 0; i <= n; i++) b.put("t", utf8(String.format("x%03d", i)), value);
            }), "dataRegionSize");
            assertTableHolds(t, model, "after the refused batch");
        }
    }

    @Test
    void badSizesAreRefusedNamingTheArgument() {
        try (Varve store = Varve.open(FixtureSupport.small(dir).build())) {
            assertTrue(store.batchFitsDataRegion(1, 0));
            FixtureSupport.rejected(store, IllegalArgumentException.class, () -> store.batchFitsDataRegion(0, 10), "operations");
            FixtureSupport.rejected(store, IllegalArgumentException.class, () -> store.batchFitsDataRegion(1, -1), "keyAndValueBytes");
        }
    }

    /** As {@code maxKeyBytes()}, it answers from what the store holds in memory, also once it is closed. */
    @Test
    void aClosedStoreStillAnswers() {
        Varve store = Varve.open(FixtureSupport.small(dir).build());
        boolean small = store.batchFitsDataRegion(10, 1000);
        boolean large = store.batchFitsDataRegion(1000, 1000);
        store.close();
        assertEquals(List.of(true, false), List.of(small, large));
        assertEquals(List.of(small, large), List.of(store.batchFitsDataRegion(10, 1000), store.batchFitsDataRegion(1000, 1000)));
    }
}
