package dev.varve.infinispan;

import org.infinispan.Cache;
import org.infinispan.manager.DefaultCacheManager;
import org.infinispan.persistence.spi.StoreUnavailableException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A cache's store fails (its disk gives I/O errors) and, while it is down, its directory stops holding it — as when a
 * failing disk is unmounted and its mount point is an empty directory again. The store must not reopen into an empty
 * store there (the cache would go on with every acknowledged write missing from its store); once the store is back in
 * place it reopens with everything.
 */
@Timeout(240)
class VanishedStoreTest {
    @TempDir
    Path dir;

    @Test
    void aStoreWhoseDirectoryNoLongerHoldsItIsNotReopenedEmpty() throws Exception {
        Path store = dir.resolve("c");
        Path away = dir.resolve("c-unmounted");
        FaultyDisk disk = new FaultyDisk(store.resolve("wal"));
        try (DefaultCacheManager m = disk.cacheManager(dir)) {
            Cache<String, String> c = m.getCache("c");
            for (int i = 0; i < 300; i++) c.put("k" + i, "v" + i);

            disk.failing.set(true);
            // a LOG_ONLY WAL is mapped: the disk is first met by the next segment or a checkpoint, after about a 4 MiB
            // segment of records. Values of 8 KiB fill it in about 500 puts; one-letter values took 13 s more CPU here
            String filler = "y".repeat(8192);
            boolean failed = false;
            for (int i = 0; !failed && i < 200_000; i++) { // the WAL's next segment or a checkpoint meets the failing disk
                try {
                    c.put("x" + i, filler);
                } catch (RuntimeException e) {
                    failed = true;
                }
            }
            assertTrue(failed, "a put fails on the failing disk");
            boolean unavailable = false;
            for (int i = 0; !unavailable && i < 3_000; i++) { // the reopen fails too: Infinispan learns at its next check
                try {
                    c.put("while-failing", "y");
                } catch (StoreUnavailableException e) {
                    unavailable = true;
                } catch (RuntimeException e) {
                    Thread.sleep(20);
                }
            }
            assertTrue(unavailable, "the failed store, unable to reopen on the failing disk, is reported unavailable");

            Files.move(store, away); // the failing disk is unmounted: its mount point is an empty directory
            Files.createDirectory(store);
            int lookups = disk.storeLookups.get();
            disk.failing.set(false);
            for (int i = 0; disk.storeLookups.get() == lookups && !Files.exists(store.resolve("wal")) && i < 6_000; i++) Thread.sleep(20);
            assertFalse(Files.exists(store.resolve("wal")), "no empty store was made where the store used to be");
            assertTrue(disk.storeLookups.get() > lookups, "a reopen looked for the store");
            assertEquals(0, Files.list(store).count(), "the empty directory is left as it was");

            Files.delete(store); // the disk is mounted again
            Files.move(away, store);
            boolean resumed = false;
            for (int i = 0; !resumed && i < 6_000; i++) {
                try {
                    c.put("after", "resumed");
                    resumed = true;
                } catch (RuntimeException e) {
                    Thread.sleep(20);
                }
            }
            assertTrue(resumed, "the store reopens once it is back in place");
        }
        try (DefaultCacheManager m = new FaultyDisk(store.resolve("wal")).cacheManager(dir)) {
            Cache<String, String> c = m.getCache("c");
            for (int i = 0; i < 300; i++) assertEquals("v" + i, c.get("k" + i), "k" + i);
            assertEquals("resumed", c.get("after"));
        }
    }
}
