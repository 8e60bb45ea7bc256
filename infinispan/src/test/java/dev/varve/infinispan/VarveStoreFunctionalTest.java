package dev.varve.infinispan;

import org.junit.jupiter.api.Timeout;
import org.infinispan.commons.test.CommonsTestingUtil;
import org.infinispan.commons.util.Util;
import org.infinispan.configuration.cache.PersistenceConfigurationBuilder;
import org.infinispan.persistence.BaseStoreFunctionalTest;
import org.testng.annotations.AfterClass;
import org.testng.annotations.Test;

/** Infinispan's functional store test (caches with preload, passivation, eviction, expiry, iteration) on {@link VarveStore}. */
@Test(groups = "unit", testName = "varve.VarveStoreFunctionalTest")
@Timeout(180)
public class VarveStoreFunctionalTest extends BaseStoreFunctionalTest {
    private final String tmpDirectory = CommonsTestingUtil.tmpDirectory(getClass());

    @AfterClass(alwaysRun = true)
    protected void clearTempDir() {
        Util.recursiveFileRemove(tmpDirectory);
    }

    @Override
    protected PersistenceConfigurationBuilder createCacheStoreConfig(PersistenceConfigurationBuilder persistence, String cacheName, boolean preload) {
        persistence.addStore(VarveStoreConfigurationBuilder.class).location(tmpDirectory)
                .dataRegionSize(16L << 20).checkpointBufferSize(2L << 20).captureBufferSize(1L << 20).walSegmentSize(4L << 20).preload(preload);
        return persistence;
    }
}
