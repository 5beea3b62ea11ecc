// Which of the given NIC keys are not in the graph (explains a rejected fabric).
// @read
// @param nic_uuids list<string>
// @row missing list<string>
UNWIND $nic_uuids AS wanted
OPTIONAL MATCH (n:NIC {uuid: wanted})
WITH wanted, count(n) AS found
WHERE found = 0
RETURN collect(wanted) AS missing
