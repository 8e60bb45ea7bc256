package dev.varve.infinispan;

import org.infinispan.Cache;
import org.infinispan.manager.DefaultCacheManager;
import org.infinispan.persistence.spi.StoreUnavailableException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A cache's Varve store on a disk that fills up and then gets room again, in a real Infinispan cache manager: the
 * store fails at the full disk as any Varve store does, and the cache then resumes by itself — no restart of the
 * cache or the node — with every acknowledged write in the store. Before, the failed store kept refusing every write
 * until the node restarted, while telling Infinispan it was available.
 */
@Timeout(240)
class FullDiskResumeTest {
    @TempDir
    Path dir;

    private static String value(int i) {
        return ("value-" + i + "-").repeat(40);
    }

    /**
     * A value of 8 to 10 KiB: a LOG_ONLY WAL is mapped, so the full disk is first met by its next segment or a
     * checkpoint, after about a 4 MiB segment of records; these fill it in about 500 puts, where values of
     * {@link #value}'s size took some 10 s more CPU here.
     */
    private static String bulky(int i) {
        return ("bulky-" + i + "-").repeat(8192 / 10);
    }

    private static boolean mentions(Throwable e, String text) {
        for (Throwable t = e; t != null; t = t.getCause()) if (String.valueOf(t.getMessage()).contains(text)) return true;
        return false;
    }

    @Test
    void aCacheResumesByItselfOnceTheFullDiskHasRoomAndLosesNoAcknowledgedWrite() throws Exception {
        FaultyDisk disk = new FaultyDisk(dir.resolve("c").resolve("wal"));
        Map<String, String> acknowledged = new LinkedHashMap<>();
        try (DefaultCacheManager m = disk.cacheManager(dir)) {
            Cache<String, String> c = m.getCache("c");
            for (int i = 0; i < 500; i++) {
                c.put("k" + i, value(i));
                acknowledged.put("k" + i, value(i));
            }

            disk.full.set(true);
            RuntimeException failed = null;
            for (int i = 500; failed == null && i < 200_000; i++) { // the WAL's next segment or a checkpoint meets the full disk
                try {
                    c.put("k" + i, bulky(i));
                    acknowledged.put("k" + i, bulky(i));
                } catch (RuntimeException e) {
                    failed = e;
                }
            }
            assertTrue(failed != null && mentions(failed, "No space left on device"), "a put on the full disk fails naming it: " + failed);
            // while the disk stays full no reopen can succeed: Infinispan learns the store is unavailable and says so
            StoreUnavailableException unavailable = null;
            for (int attempt = 0; unavailable == null && attempt < 3_000; attempt++) {
                try {
                    c.put("while-full", "x");
                } catch (StoreUnavailableException e) {
                    unavailable = e;
                } catch (RuntimeException e) {
                    assertTrue(mentions(e, "No space left on device") || mentions(e, "failed"), "a put on the full disk: " + e);
                }
                Thread.sleep(20);
            }
            assertTrue(unavailable != null, "Infinispan is told the store is unavailable while its disk is full");

            disk.full.set(false); // space freed
            RuntimeException last = null;
            boolean resumed = false;
            for (int attempt = 0; !resumed && attempt < 3_000; attempt++) { // Infinispan asks every 100 ms; the store reopens when asked
                try {
                    c.put("after", "resumed");
                    resumed = true;
                } catch (RuntimeException e) {
                    last = e;
                    Thread.sleep(20);
                }
            }
            assertTrue(resumed, "the cache resumes once the disk has room, without a restart; last error: " + last);
            acknowledged.put("after", "resumed");
            for (int i = 0; i < 200; i++) {
                c.put("later" + i, value(i));
                acknowledged.put("later" + i, value(i));
            }
        }
        try (DefaultCacheManager m = new FaultyDisk(dir.resolve("c").resolve("wal")).cacheManager(dir)) { // a restart reads every key from the store, none from memory
            Cache<String, String> c = m.getCache("c");
            for (Map.Entry<String, String> e : acknowledged.entrySet()) assertEquals(e.getValue(), c.get(e.getKey()), e.getKey());
        }
    }
}
