package dev.varve.infinispan;

import jakarta.transaction.TransactionManager;
import org.infinispan.Cache;
import org.infinispan.commons.CacheException;
import org.infinispan.configuration.cache.ConfigurationBuilder;
import org.infinispan.configuration.global.GlobalConfigurationBuilder;
import org.infinispan.manager.DefaultCacheManager;
import org.infinispan.transaction.TransactionMode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** A transactional cache reaches the store through {@link VarveStore#batch} at commit: one call for all its changes. */
@Timeout(120)
class TransactionalCacheTest {
    @TempDir
    Path dir;

    private DefaultCacheManager manager() {
        ConfigurationBuilder cb = new ConfigurationBuilder();
        cb.transaction().transactionMode(TransactionMode.TRANSACTIONAL);
        cb.persistence().addStore(VarveStoreConfigurationBuilder.class).location(dir.toString())
                .dataRegionSize(16L << 20).checkpointBufferSize(2L << 20).captureBufferSize(1L << 20).walSegmentSize(4L << 20);
        DefaultCacheManager m = new DefaultCacheManager(new GlobalConfigurationBuilder().nonClusteredDefault().build());
        m.defineConfiguration("c", cb.build());
        return m;
    }

    /**
     * A key longer than the store holds can never be in it, so removing it is a no-op, as it is outside a transaction;
     * it used to fail the whole batch and roll the transaction back (HeuristicRollbackException), losing its other writes.
     */
    @Test
    void removingAKeyTooLongToBeStoredDoesNotFailTheTransaction() throws Exception {
        String tooLong = "K".repeat(2000);
        try (DefaultCacheManager m = manager()) {
            Cache<String, String> c = m.getCache("c");
            TransactionManager tm = c.getAdvancedCache().getTransactionManager();
            tm.begin();
            assertNull(c.remove(tooLong));
            c.put("a", "b");
            tm.commit();
        }
        try (DefaultCacheManager m = manager()) {
            assertEquals("b", m.<String, String>getCache("c").get("a"), "the transaction's write reached the store");
        }
    }

    /**
     * The store is not TRANSACTIONAL, so Infinispan writes it only at commit, after memory has the changes: an entry
     * the store refuses fails the commit, yet stays readable from memory until a restart (the README says so).
     */
    @Test
    void anEntryTheStoreRefusesFailsTheCommitButStaysInMemory() throws Exception {
        String tooLong = "K".repeat(2000);
        try (DefaultCacheManager m = manager()) {
            Cache<String, String> c = m.getCache("c");
            assertThrows(CacheException.class, () -> c.put(tooLong, "v")); // the implicit transaction's heuristic rollback
            assertEquals("v", c.get(tooLong));
        }
        try (DefaultCacheManager m = manager()) {
            assertNull(m.<String, String>getCache("c").get(tooLong));
        }
    }
}
