package dev.varve.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.config.RecoveryMode;
import dev.varve.config.VarveConfig;
import java.lang.management.ManagementFactory;
import java.lang.reflect.Method;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import javax.management.Attribute;
import javax.management.MBeanAttributeInfo;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.openmbean.OpenType;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXConnectorServer;
import javax.management.remote.JMXConnectorServerFactory;
import javax.management.remote.JMXServiceURL;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** The store's MXBean as a remote console sees it, against {@link Varve#metrics()} (see {@link MetricsInvariantsTest}). */
class MetricsJmxConnectorTest {
    @TempDir
    Path dir;

    /**
     * The MXBean read as an operator's console reads it: over a JMX connector on a loopback port, by a client that
     * knows only javax.management and open types. Every VarveMetrics figure and every part of the last checkpoint is
     * an attribute, and at a quiescent moment each equals the figure {@link Varve#metrics()} gives.
     */
    @ParameterizedTest
    @EnumSource(RecoveryMode.class)
    @Timeout(value = 1, unit = TimeUnit.MINUTES)
    @SuppressWarnings("try") // closes the store inside its try to see its MBean go: close is idempotent
    void theMXBeanOverARemoteConnectorAgreesWithTheMetrics(RecoveryMode mode) throws Exception {
        VarveConfig c = MetricsInvariantsTest.config(dir.resolve("store"), mode);
        ObjectName name = new ObjectName("dev.varve:type=Store,name=" + ObjectName.quote(c.name()));
        JMXConnectorServer server = JMXConnectorServerFactory.newJMXConnectorServer(new JMXServiceURL("rmi", "127.0.0.1", 0), null,
                ManagementFactory.getPlatformMBeanServer());
        server.start();
        try (Varve store = Varve.open(c); JMXConnector client = JMXConnectorFactory.connect(server.getAddress())) {
            MBeanServerConnection conn = client.getMBeanServerConnection();
            Table t = store.table("t");
            long previous = 0;
            for (int r = 0; r < 12; r++) {
                MetricsInvariantsTest.round(store, t, r, new MetricsInvariantsTest.Tally());
                long s = store.snapshotNow();
                if (r == 6) store.rank(previous, 2);
                previous = s;
                if (r % 4 == 3) store.checkpoint().join();
            }
            store.checkpoint().join();
            VarveMetrics m = store.metrics();
            MetricsInvariantsTest.Figures before = MetricsInvariantsTest.Figures.of(m);
            MBeanAttributeInfo[] infos = conn.getMBeanInfo(name).getAttributes();
            Map<String, Object> attrs = new HashMap<>();
            String[] names = Arrays.stream(infos).map(MBeanAttributeInfo::getName).toArray(String[]::new);
            for (Attribute a : conn.getAttributes(name, names).asList()) attrs.put(a.getName(), a.getValue());
            assertEquals(before, MetricsInvariantsTest.Figures.of(m), "quiescent: nothing changed while the attributes were read");
            assertEquals(names.length, attrs.size(), "every attribute could be read: " + attrs.keySet());
            for (MBeanAttributeInfo info : infos) {
                assertTrue(info.getDescriptor().getFieldValue("openType") instanceof OpenType<?>, info.getName() + " has an open type");
                Object v = attrs.get(info.getName());
                Class<?> k = v == null ? String.class : v.getClass();
                while (k.isArray()) k = k.getComponentType();
                assertTrue(k.isPrimitive() || k.getName().startsWith("java."), info.getName() + " is " + k);
            }
            int figures = 0;
            for (Method metric : VarveMetrics.class.getMethods()) {
                if (metric.getName().equals("lastCheckpoint")) continue;
                String attr = Character.toUpperCase(metric.getName().charAt(0)) + metric.getName().substring(1);
                assertTrue(attrs.containsKey(attr), "VarveMetrics." + metric.getName() + " is the attribute " + attr + ": " + attrs.keySet());
                Object expected = metric.invoke(m);
                Object actual = attrs.get(attr);
                if (expected instanceof long[] a) assertArrayEquals(a, (long[]) actual, attr);
                else if (expected instanceof Double d) assertEquals(0, Double.compare(d, (Double) actual), attr + ": " + d + " vs " + actual);
                else assertEquals(expected, actual, attr);
                figures++;
            }
            assertEquals(21, figures, "every figure but the last checkpoint, which is told in parts");
            CheckpointStats last = m.lastCheckpoint();
            assertTrue(last.id() > 0);
            for (Method part : CheckpointStats.class.getDeclaredMethods()) {
                if (!java.lang.reflect.Modifier.isPublic(part.getModifiers()) || java.lang.reflect.Modifier.isStatic(part.getModifiers())
                        || part.getParameterCount() > 0 || Arrays.asList("toString", "hashCode").contains(part.getName())) continue;
                String attr = "LastCheckpoint" + Character.toUpperCase(part.getName().charAt(0)) + part.getName().substring(1);
                assertTrue(attrs.containsKey(attr), attr + ": " + attrs.keySet());
                Object expected = part.invoke(last);
                Object actual = attrs.get(attr);
                if (expected instanceof Number n) assertEquals(n.longValue(), ((Number) actual).longValue(), attr);
                else assertEquals(expected, actual, attr);
            }
            assertEquals(store.snapshots().size(), attrs.get("LiveSnapshots"));
            assertEquals(c.name(), attrs.get("Name"));
            assertEquals(false, attrs.get("ReadOnly"));
            store.close();
            assertTrue(!conn.isRegistered(name), "a closed store's MBean is gone");
        } finally {
            server.stop();
        }
    }
}
