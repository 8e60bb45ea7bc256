package dev.varve.infinispan;

import org.infinispan.commons.configuration.io.ConfigurationWriter;
import org.infinispan.configuration.serializing.AbstractStoreSerializer;
import org.infinispan.configuration.serializing.ConfigurationSerializer;

/**
 * Writes a {@link VarveStoreConfiguration} as the {@code <varve-store>} element that
 * {@link VarveStoreConfigurationParser} reads. Infinispan serializes a cache's configuration whenever it leaves the
 * JVM: a cache created through {@code administration()} is sent to every node and kept in the global state as text,
 * and a node that joins later parses it. Without this, Infinispan falls back to a generic {@code <store class=...>}
 * carrying Varve's attributes, which no parser accepts: the cache could not start on the other nodes, and a node
 * restarted afterwards could not start at all.
 */
public class VarveStoreConfigurationSerializer extends AbstractStoreSerializer implements ConfigurationSerializer<VarveStoreConfiguration> {
    @Override
    public void serialize(ConfigurationWriter writer, VarveStoreConfiguration configuration) {
        writer.writeStartElement(XmlNames.Element.VARVE_STORE);
        writer.writeDefaultNamespace(XmlNames.NAMESPACE + XmlNames.VERSION);
        configuration.attributes().write(writer);
        writeCommonStoreSubAttributes(writer, configuration);
        writeCommonStoreElements(writer, configuration);
        writer.writeEndElement();
    }
}
