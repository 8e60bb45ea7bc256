package dev.varve.infinispan;

import org.junit.jupiter.api.Timeout;
import org.infinispan.commons.test.CommonsTestingUtil;
import org.infinispan.commons.util.Util;
import org.infinispan.configuration.cache.Configuration;
import org.infinispan.configuration.cache.ConfigurationBuilder;
import org.infinispan.persistence.BaseNonBlockingStoreTest;
import org.infinispan.persistence.spi.NonBlockingStore;
import org.testng.annotations.AfterClass;
import org.testng.annotations.Test;

/** Infinispan's own contract test for non-blocking stores, run against {@link VarveStore}. */
@Test(groups = "unit", testName = "varve.VarveStoreTest")
@Timeout(180)
public class VarveStoreTest extends BaseNonBlockingStoreTest {
    private final String tmpDirectory = CommonsTestingUtil.tmpDirectory(getClass());

    @AfterClass(alwaysRun = true)
    protected void clearTempDir() {
        Util.recursiveFileRemove(tmpDirectory);
    }

    @Override
    protected Configuration buildConfig(ConfigurationBuilder cb) {
        cb.clustering().hash().numSegments(16);
        cb.persistence().addStore(VarveStoreConfigurationBuilder.class).location(tmpDirectory)
                // each test opens a new store, and an open zero-fills its whole region: 16 MiB holds what they write
                .dataRegionSize(16L << 20).checkpointBufferSize(2L << 20).captureBufferSize(1L << 20).walSegmentSize(4L << 20);
        return cb.build();
    }

    @Override
    protected NonBlockingStore<Object, Object> createStore() {
        clearTempDir();
        return new VarveStore<>();
    }
}
