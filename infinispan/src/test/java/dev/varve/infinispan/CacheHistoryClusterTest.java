package dev.varve.infinispan;

import org.infinispan.Cache;
import org.infinispan.commons.dataconversion.MediaType;
import org.infinispan.context.Flag;
import org.infinispan.commons.api.CacheContainerAdmin;
import org.infinispan.configuration.cache.CacheMode;
import org.infinispan.configuration.cache.ConfigurationBuilder;
import org.infinispan.configuration.global.GlobalConfigurationBuilder;
import org.infinispan.manager.DefaultCacheManager;
import org.infinispan.topology.CacheTopology;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link CacheHistory} and cache creation on a cluster of cache managers in this JVM (JGroups TCP on 127.0.0.1, one
 * port and one store directory each), for what needs several members but no crash.
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class CacheHistoryClusterTest {
    private static final String CACHE = "grid";
    private static final int SEGMENTS = 32;

    @TempDir
    Path dir;
    private int[] ports;
    private final List<DefaultCacheManager> nodes = new ArrayList<>();

    @AfterEach
    void stopNodes() {
        for (int i = nodes.size() - 1; i >= 0; i--) nodes.get(i).stop();
    }

    /** The loopback JGroups stack of the module's tests, with node {@code i}'s port and every node as initial host. */
    private Path jgroups(int i) throws Exception {
        StringBuilder hosts = new StringBuilder();
        for (int p : ports) hosts.append(hosts.length() == 0 ? "" : ",").append("127.0.0.1[").append(p).append(']');
        String xml;
        try (var in = getClass().getResourceAsStream("/jgroups-loopback.xml")) {
            xml = new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        }
        Path f = dir.resolve("jgroups-" + i + ".xml");
        Files.writeString(f, xml.replace("${varve.test.port}", String.valueOf(ports[i])).replace("${varve.test.hosts}", hosts));
        return f;
    }

    private static ConfigurationBuilder storeConfig(ConfigurationBuilder cb) {
        cb.clustering().cacheMode(CacheMode.DIST_SYNC).hash().numOwners(2).numSegments(SEGMENTS);
        cb.persistence().addStore(VarveStoreConfigurationBuilder.class).dataRegionSize(16L << 20).checkpointBufferSize(2L << 20)
                .captureBufferSize(1L << 20).walSegmentSize(4L << 20);
        return cb;
    }

    /** Starts node {@code i} (global state, and so every store, in its own directory) and waits for a stable topology. */
    private DefaultCacheManager start(int i) throws Exception {
        GlobalConfigurationBuilder global = GlobalConfigurationBuilder.defaultClusteredBuilder();
        global.serialization().addContextInitializer(CacheHistory.serializationContext());
        global.transport().clusterName("history-" + ports[0]).nodeName("N" + i).addProperty("configurationFile", jgroups(i).toString());
        global.globalState().enable().persistentLocation(dir.resolve("node" + i).toString());
        DefaultCacheManager m = new DefaultCacheManager(global.build(), false);
        m.defineConfiguration(CACHE, storeConfig(new ConfigurationBuilder()).build());
        m.start();
        nodes.add(m);
        awaitStable();
        return m;
    }

    private void awaitStable() throws InterruptedException {
        for (DefaultCacheManager m : nodes) {
            while (true) {
                CacheTopology t = m.getCache(CACHE).getAdvancedCache().getDistributionManager().getCacheTopology();
                if (t.getMembers().size() == nodes.size() && t.getPhase() == CacheTopology.Phase.NO_REBALANCE && t.getPendingCH() == null) break;
                Thread.sleep(50);
            }
        }
    }

    @Test
    void aLabelDeclaredAgainAfterAJoinIsRefusedEverywhereAndStaysReadable() throws Exception {
        ports = NodeProcess.freePorts(3);
        DefaultCacheManager a = start(0);
        start(1);
        Cache<String, String> cache = a.getCache(CACHE);
        Map<String, String> entries = new HashMap<>();
        for (int i = 0; i < 1000; i++) entries.put("k" + i, "v" + i);
        cache.putAll(entries);
        assertEquals(2, CacheHistory.declare(a, CACHE, "end-of-day").size());
        DefaultCacheManager c = start(2); // holds no label: it would record its own primary segments under the old one

        IllegalStateException e = assertThrows(IllegalStateException.class, () -> CacheHistory.declare(c, CACHE, "end-of-day"));
        assertEquals(entries, CacheHistory.readAsOf(c, CACHE, "end-of-day"), "the label still reads the state it was declared with");
        assertTrue(e.getMessage().contains("already used on"), e.getMessage());
        assertEquals(3, CacheHistory.declare(c, CACHE, "next-day").size());
    }

    /** A cache created at run time travels to the other nodes as configuration text, and is kept as such in the global state. */
    @Test
    void aCacheCreatedThroughAdministrationStartsOnEveryNode() throws Exception {
        ports = NodeProcess.freePorts(2);
        DefaultCacheManager a = start(0);
        DefaultCacheManager b = start(1);
        Cache<String, String> created = a.administration().withFlags(CacheContainerAdmin.AdminFlag.VOLATILE)
                .getOrCreateCache("created", storeConfig(new ConfigurationBuilder()).build());
        created.put("k", "v");
        assertEquals("v", b.<String, String>getCache("created").get("k"));
    }

    /**
     * With an encoding (protostream, Infinispan Server's default) the copies resolveAll finds are in the cache's storage
     * form, and so must its writes be.
     */
    @Test
    void resolveAllRepairsAnEncodedCache() throws Exception {
        ports = NodeProcess.freePorts(2);
        DefaultCacheManager a = start(0);
        DefaultCacheManager b = start(1);
        ConfigurationBuilder encoded = storeConfig(new ConfigurationBuilder());
        encoded.encoding().mediaType(MediaType.APPLICATION_PROTOSTREAM_TYPE);
        a.administration().withFlags(CacheContainerAdmin.AdminFlag.VOLATILE).getOrCreateCache("encoded", encoded.build());
        a.<String, String>getCache("encoded").getAdvancedCache().withFlags(Flag.CACHE_MODE_LOCAL).put("k", "v"); // on a only: a conflict
        assertEquals(1, ClusterRecovery.resolveAll(a, "encoded").resolved());
        assertEquals("v", b.<String, String>getCache("encoded").getAdvancedCache().withFlags(Flag.CACHE_MODE_LOCAL).get("k"));
        assertEquals(java.util.Set.of("k"), new java.util.HashSet<>(a.<String, String>getCache("encoded").keySet()), "no other key was written");
    }
}
