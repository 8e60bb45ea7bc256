package dev.varve.infinispan;

import org.infinispan.Cache;
import org.infinispan.commons.api.CacheContainerAdmin;
import org.infinispan.commons.dataconversion.MediaType;
import org.infinispan.manager.EmbeddedCacheManagerAdmin;
import org.infinispan.commons.util.Util;
import org.infinispan.configuration.cache.Configuration;
import org.infinispan.configuration.cache.ConfigurationBuilder;
import org.infinispan.configuration.global.GlobalConfigurationBuilder;
import org.infinispan.manager.DefaultCacheManager;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link CacheHistory} on one node with a local cache: labels, the state as of a label, restarts and bad input (and
 * {@link ClusterRecovery}'s, which has nothing to do without a cluster).
 */
@Timeout(120)
class CacheHistoryLocalTest {
    @TempDir
    Path dir;

    private DefaultCacheManager manager() {
        return manager(cb -> { });
    }

    private DefaultCacheManager manager(java.util.function.Consumer<ConfigurationBuilder> more) {
        GlobalConfigurationBuilder global = new GlobalConfigurationBuilder().nonClusteredDefault();
        global.serialization().addContextInitializer(CacheHistory.serializationContext());
        ConfigurationBuilder cb = new ConfigurationBuilder();
        cb.persistence().addStore(VarveStoreConfigurationBuilder.class).location(dir.toString())
                .dataRegionSize(16L << 20).checkpointBufferSize(2L << 20).captureBufferSize(1L << 20).walSegmentSize(4L << 20);
        more.accept(cb);
        DefaultCacheManager m = new DefaultCacheManager(global.build());
        m.defineConfiguration("c", cb.build());
        return m;
    }

    /** A label promises every acknowledged write; a store that is not written through on every write cannot hold them all. */
    @Test
    void aCacheWhoseStoreIsNotWrittenThroughHasNoHistory() throws Exception {
        try (DefaultCacheManager m = manager(cb -> cb.persistence().passivation(true))) {
            m.getCache("c").put("k", "v"); // in memory only: nothing was evicted
            assertMessage(IllegalArgumentException.class, "uses passivation", () -> CacheHistory.declare(m, "c", "label"));
        }
        try (DefaultCacheManager m = manager(cb -> cb.persistence().stores().get(0).async().enable())) {
            assertMessage(IllegalArgumentException.class, "write-behind", () -> CacheHistory.declare(m, "c", "label"));
        }
    }

    @Test
    void aLabelReadsTheStateAtItsDeclarationAlsoAfterARestart() throws Exception {
        try (DefaultCacheManager m = manager()) {
            Cache<String, String> c = m.getCache("c");
            for (int i = 0; i < 300; i++) c.put("k" + i, "old" + i);
            assertEquals(1, CacheHistory.declare(m, "c", "before").size());
            for (int i = 0; i < 300; i += 2) c.put("k" + i, "new" + i);
            c.remove("k1");
            c.put("added", "x");
            Map<String, String> past = CacheHistory.readAsOf(m, "c", "before");
            assertEquals(300, past.size());
            for (int i = 0; i < 300; i++) assertEquals("old" + i, past.get("k" + i));
            assertNull(past.get("added"));
            assertEquals("new0", c.get("k0"), "the live cache moved on");
        }
        try (DefaultCacheManager m = manager()) {
            Map<String, String> past = CacheHistory.readAsOf(m, "c", "before");
            assertEquals("old1", past.get("k1"), "the label and its snapshot survive a restart");
            assertEquals(300, past.size());
        }
    }

    /** Each declare is one snapshot of the store, so the store's retention decides how many labels stay readable. */
    @Test
    void aLabelWhoseSnapshotRetentionDroppedFailsNamingTheRule() throws Exception {
        try (DefaultCacheManager m = manager(cb -> ((VarveStoreConfigurationBuilder) cb.persistence().stores().get(0)).retention("keepLast(1)"))) {
            Cache<String, String> c = m.getCache("c");
            c.put("k", "old");
            CacheHistory.declare(m, "c", "first");
            c.put("k", "new");
            CacheHistory.declare(m, "c", "second");
            assertEquals(Map.of("k", "new"), CacheHistory.readAsOf(m, "c", "second"));
            assertMessage(IllegalStateException.class, "dropped by the retention policy", () -> CacheHistory.readAsOf(m, "c", "first"));
            assertMessage(IllegalStateException.class, "already used", () -> CacheHistory.declare(m, "c", "first"));
        }
    }

    /** Infinispan clears a removed cache's store and stops it but never destroys it: the history stays with the directory. */
    @Test
    void aRemovedCachesHistoryStaysUntilItsDirectoryIsDeleted() throws Exception {
        try (DefaultCacheManager m = manager()) {
            m.getCache("c").put("k", "removed");
            CacheHistory.declare(m, "c", "label");
            Configuration conf = m.getCacheConfiguration("c");
            EmbeddedCacheManagerAdmin admin = m.administration().withFlags(CacheContainerAdmin.AdminFlag.VOLATILE);
            admin.removeCache("c");
            admin.createCache("c", conf);
            assertEquals(0, m.getCache("c").size());
            assertEquals(Map.of("k", "removed"), CacheHistory.readAsOf(m, "c", "label"), "the new cache reads the removed one's label");
            admin.removeCache("c");
            Util.recursiveFileRemove(dir.resolve("c").toFile());
            admin.createCache("c", conf);
            assertMessage(IllegalArgumentException.class, "no node knows", () -> CacheHistory.readAsOf(m, "c", "label"));
        }
    }

    /**
     * A cache with an encoding (protostream here, Infinispan Server's default) keeps its entries in the store in that
     * form: readAsOf used to hand back WrappedByteArrays of protostream bytes, so a lookup by the caller's key found nothing.
     */
    @Test
    void anEncodedCacheReadsAsOfALabelInTheCallersTypes() throws Exception {
        try (DefaultCacheManager m = manager(cb -> cb.encoding().mediaType(MediaType.APPLICATION_PROTOSTREAM_TYPE))) {
            m.getCache("c").put("k", "v");
            CacheHistory.declare(m, "c", "label");
            assertEquals(Map.of("k", "v"), CacheHistory.readAsOf(m, "c", "label"));
        }
    }

    @Test
    void badInputIsRejectedByName() throws Exception {
        try (DefaultCacheManager m = manager()) {
            m.getCache("c").put("k", "v");
            CacheHistory.declare(m, "c", "once");
            assertMessage(IllegalStateException.class, "already used", () -> CacheHistory.declare(m, "c", "once"));
            assertMessage(IllegalArgumentException.class, "no node knows", () -> CacheHistory.readAsOf(m, "c", "never"));
            assertMessage(IllegalArgumentException.class, "no cache named", () -> CacheHistory.declare(m, "missing", "x"));
            assertMessage(IllegalArgumentException.class, "label is null", () -> CacheHistory.declare(m, "c", null));
            assertMessage(IllegalArgumentException.class, "label is null or empty", () -> CacheHistory.readAsOf(m, "c", ""));
            assertMessage(RuntimeException.class, "snapshot label of 2000 bytes (UTF-8) exceeds the maximum of 1024 bytes",
                    () -> CacheHistory.declare(m, "c", "x".repeat(2000)));
            assertMessage(RuntimeException.class, "snapshot label of 2000 bytes", () -> CacheHistory.readAsOf(m, "c", "x".repeat(2000)));
            assertMessage(IllegalArgumentException.class, "not clustered", () -> ClusterRecovery.resolveAll(m, "c"));
            assertMessage(IllegalArgumentException.class, "no cache named", () -> ClusterRecovery.resolveAll(m, "missing"));
            assertMessage(IllegalArgumentException.class, "cache manager is null", () -> ClusterRecovery.resolveAll(null, "c"));
        }
    }

    private static void assertMessage(Class<? extends Throwable> type, String part, org.junit.jupiter.api.function.Executable e) {
        Throwable t = assertThrows(type, e);
        StringBuilder all = new StringBuilder();
        for (Throwable x = t; x != null; x = x.getCause()) all.append(x.getMessage()).append(" | ");
        assertTrue(all.toString().contains(part), "expected '" + part + "' in: " + all);
    }
}
