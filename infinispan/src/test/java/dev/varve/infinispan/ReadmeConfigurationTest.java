package dev.varve.infinispan;

import dev.varve.config.RecoveryCompression;
import dev.varve.config.RecoveryMode;
import dev.varve.config.WalSyncMode;
import org.infinispan.configuration.cache.CacheMode;
import org.infinispan.configuration.cache.Configuration;
import org.infinispan.configuration.cache.ConfigurationBuilder;
import org.infinispan.configuration.global.GlobalConfigurationBuilder;
import org.infinispan.configuration.parsing.ConfigurationBuilderHolder;
import org.infinispan.configuration.parsing.ParserRegistry;
import org.infinispan.manager.DefaultCacheManager;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The README's "Running in Infinispan" snippets are what embedders paste: the XML one is read from README.md itself
 * and parsed with Infinispan's own parser, so the README cannot drift from the schema, and it must describe the same
 * store as the programmatic snippet (copied here verbatim, so it keeps compiling).
 */
@Timeout(60)
class ReadmeConfigurationTest {
    @TempDir
    Path dir;

    /** The first {@code ```xml} block after the "Running in Infinispan" heading of the repository's README. */
    static String readmeXmlSnippet() throws IOException {
        Path readme = Path.of("").toAbsolutePath();
        while (readme != null && !Files.exists(readme.resolve("README.md"))) {
            readme = readme.getParent();
        }
        assertTrue(readme != null, "README.md not found above " + Path.of("").toAbsolutePath());
        String text = Files.readString(readme.resolve("README.md"));
        int section = text.indexOf("## Running in Infinispan");
        assertTrue(section >= 0, "README.md has no 'Running in Infinispan' section");
        int start = text.indexOf("```xml\n", section) + "```xml\n".length();
        int end = text.indexOf("```", start);
        assertTrue(start > section && end > start, "no xml block in README.md's Infinispan section");
        return text.substring(start, end);
    }

    @Test
    void theReadmesXmlParsesToTheStoreItsProgrammaticSnippetBuilds() throws IOException {
        String xml = "<infinispan><cache-container>" + readmeXmlSnippet() + "</cache-container></infinispan>";
        ConfigurationBuilderHolder holder = new ParserRegistry().parse(xml);
        Configuration declarative = holder.getNamedConfigurationBuilders().get("accounts").build();

        ConfigurationBuilder cb = new ConfigurationBuilder();
        cb.clustering().cacheMode(CacheMode.DIST_SYNC).hash().numOwners(2);
        cb.persistence().addStore(VarveStoreConfigurationBuilder.class)
                .location("/var/lib/grid/varve")                           // one store per cache below it
                .dataRegionSize(512L << 20)
                .recoveryMode(RecoveryMode.CHECKPOINT_RECOVERY_FILE).recoveryCompression(RecoveryCompression.SNAPPY)
                .walSyncMode(WalSyncMode.LOG_ONLY)
                .retention("keepLast(24),keepFor(P7D)");                  // snapshot retention, RankTreePolicy syntax
        Configuration programmatic = cb.build();

        assertEquals(CacheMode.DIST_SYNC, declarative.clustering().cacheMode());
        assertEquals(2, declarative.clustering().hash().numOwners());
        VarveStoreConfiguration store = (VarveStoreConfiguration) declarative.persistence().stores().get(0);
        assertEquals(((VarveStoreConfiguration) programmatic.persistence().stores().get(0)).attributes(), store.attributes());
        assertEquals("/var/lib/grid/varve", store.location());
        assertEquals(512L << 20, store.dataRegionSize());
    }

    /** The README: {@code shared="true"} is refused, since a Varve directory belongs to one process. */
    @Test
    void aSharedStoreIsRefused() throws Exception {
        int port;
        try (ServerSocket free = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = free.getLocalPort();
        }
        // jgroups-loopback.xml takes its one node's port from these (a node alone: it finds no peer and starts)
        System.setProperty("varve.test.port", String.valueOf(port));
        System.setProperty("varve.test.hosts", "127.0.0.1[" + port + "]");
        GlobalConfigurationBuilder global = GlobalConfigurationBuilder.defaultClusteredBuilder();
        global.transport().clusterName("varve-readme-shared").addProperty("configurationFile", "jgroups-loopback.xml");
        global.globalState().enable().persistentLocation(dir.toString());
        ConfigurationBuilder cb = new ConfigurationBuilder();
        cb.clustering().cacheMode(CacheMode.DIST_SYNC);
        cb.persistence().addStore(VarveStoreConfigurationBuilder.class).location(dir.resolve("varve").toString()).shared(true);
        try (DefaultCacheManager manager = new DefaultCacheManager(global.build())) {
            manager.defineConfiguration("c", cb.build());
            Throwable t = assertThrows(Throwable.class, () -> manager.getCache("c"));
            StringBuilder all = new StringBuilder();
            for (Throwable c = t; c != null; c = c.getCause()) all.append(c).append('\n');
            assertTrue(all.toString().contains("cannot be configured to be shared"), all.toString());
        } finally {
            System.clearProperty("varve.test.port");
            System.clearProperty("varve.test.hosts");
        }
    }
}
