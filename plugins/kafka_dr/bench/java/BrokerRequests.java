// The requests each lab broker has served, by API (kafka.network RequestMetrics, summed over
// versions): one line "pid<TAB>request<TAB>count" per broker and API. It attaches to each broker
// JVM by pid (the JDK's attach API, the same user's processes only) and reads its MBeans through
// the local management agent, so the brokers need no JMX port.
import com.sun.tools.attach.VirtualMachine;
import java.util.Map;
import java.util.TreeMap;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;

public class BrokerRequests {
    public static void main(String[] args) throws Exception {
        ObjectName query = new ObjectName("kafka.network:type=RequestMetrics,name=RequestsPerSec,*");
        for (String pid : args) {
            VirtualMachine vm = VirtualMachine.attach(pid);
            String url;
            try {
                url = vm.startLocalManagementAgent();
            } finally {
                vm.detach();
            }
            Map<String, Long> counts = new TreeMap<>();
            try (JMXConnector connector = JMXConnectorFactory.connect(new JMXServiceURL(url))) {
                MBeanServerConnection server = connector.getMBeanServerConnection();
                for (ObjectName name : server.queryNames(query, null)) {
                    long count = ((Number) server.getAttribute(name, "Count")).longValue();
                    counts.merge(name.getKeyProperty("request"), count, Long::sum);
                }
            }
            for (Map.Entry<String, Long> e : counts.entrySet()) {
                System.out.println(pid + "\t" + e.getKey() + "\t" + e.getValue());
            }
        }
    }
}
