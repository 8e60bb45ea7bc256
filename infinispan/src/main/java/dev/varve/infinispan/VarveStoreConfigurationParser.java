package dev.varve.infinispan;

import dev.varve.config.RecoveryCompression;
import dev.varve.config.RecoveryMode;
import dev.varve.config.WalSyncMode;
import org.infinispan.commons.configuration.io.ConfigurationReader;
import org.infinispan.configuration.parsing.CacheParser;
import org.infinispan.configuration.parsing.ConfigurationBuilderHolder;
import org.infinispan.configuration.parsing.ConfigurationParser;
import org.infinispan.configuration.parsing.Namespace;
import org.infinispan.configuration.parsing.Namespaces;
import org.infinispan.configuration.parsing.ParseUtils;

/**
 * Reads the declarative form, registered through {@code META-INF/services}:
 * <pre>{@code
 * <persistence>
 *   <varve-store xmlns="urn:varve:infinispan:store:0.1" path="/var/lib/grid/varve" data-region-size="536870912"
 *                recovery-mode="CHECKPOINT_RECOVERY_FILE" recovery-compression="SNAPPY" wal-sync-mode="LOG_ONLY"
 *                retention="keepLast(24),keepFor(P7D)"/>
 * </persistence>
 * }</pre>
 * Infinispan's common store attributes ({@code preload}, {@code shared}, ...) and child elements ({@code property},
 * {@code write-behind}) are read by Infinispan's own store parsing. A bad value fails naming the attribute.
 */
@Namespaces({
        @Namespace(root = XmlNames.ROOT),
        @Namespace(uri = XmlNames.NAMESPACE + "*", root = XmlNames.ROOT, since = "0.1"),
})
public class VarveStoreConfigurationParser implements ConfigurationParser {

    @Override
    public void readElement(ConfigurationReader reader, ConfigurationBuilderHolder holder) {
        if (!XmlNames.ROOT.equals(reader.getLocalName())) throw ParseUtils.unexpectedElement(reader);
        VarveStoreConfigurationBuilder builder = holder.getCurrentConfigurationBuilder().persistence().addStore(VarveStoreConfigurationBuilder.class);
        for (int i = 0; i < reader.getAttributeCount(); i++) {
            ParseUtils.requireNoNamespaceAttribute(reader, i);
            String name = reader.getAttributeName(i);
            String value = reader.getAttributeValue(i);
            try {
                if (!readVarveAttribute(builder, name, value)) CacheParser.parseStoreAttribute(reader, i, builder);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("varve-store attribute " + name + "=\"" + value + "\": " + e.getMessage(), e);
            }
        }
        while (reader.inTag()) CacheParser.parseStoreElement(reader, builder);
    }

    /** Applies one of Varve's own attributes; false when the attribute is one of Infinispan's common ones. */
    private static boolean readVarveAttribute(VarveStoreConfigurationBuilder b, String name, String value) {
        switch (name) {
            case XmlNames.PATH -> b.location(value);
            case XmlNames.DATA_REGION_SIZE -> b.dataRegionSize(bytes(value));
            case XmlNames.CHECKPOINT_BUFFER_SIZE -> b.checkpointBufferSize(bytes(value));
            case XmlNames.CAPTURE_BUFFER_SIZE -> b.captureBufferSize(bytes(value));
            case XmlNames.WAL_SEGMENT_SIZE -> b.walSegmentSize(bytes(value));
            case XmlNames.RECOVERY_MODE -> b.recoveryMode(oneOf(RecoveryMode.class, value));
            case XmlNames.RECOVERY_COMPRESSION -> b.recoveryCompression(oneOf(RecoveryCompression.class, value));
            case XmlNames.WAL_SYNC_MODE -> b.walSyncMode(oneOf(WalSyncMode.class, value));
            case XmlNames.RETENTION -> b.retention(value);
            default -> {
                return false;
            }
        }
        return true;
    }

    /** A byte count in decimal; the caller's message names the attribute. */
    private static long bytes(String value) {
        try {
            return Long.parseLong(value.strip());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("expected a number of bytes in decimal (e.g. 536870912)", e);
        }
    }

    /** The constant {@code value} names (the schema types these attributes as tokens: surrounding blanks do not count). */
    private static <E extends Enum<E>> E oneOf(Class<E> type, String value) {
        try {
            return Enum.valueOf(type, value.strip());
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("expected one of " + java.util.Arrays.toString(type.getEnumConstants()), e);
        }
    }

    @Override
    public Namespace[] getNamespaces() {
        return ParseUtils.getNamespaceAnnotations(getClass());
    }
}
