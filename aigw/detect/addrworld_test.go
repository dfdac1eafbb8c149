package detect

import (
	"testing"
)

// TestWorldAddresses covers the address shapes of addrworld.go and, for each, a look-alike that
// must stay no address.
func TestWorldAddresses(t *testing.T) {
	e := newEngine(t, Options{Types: []string{TypeStreetAddress}})
	checkScans(t, e, []scanCase{
		{"mexico colonia and C.P.", "Domicilio: Calle Durango 214, Col. Roma Norte, C.P. 06700, CDMX\nRFC", []string{"street_address:Calle Durango 214, Col. Roma Norte, C.P. 06700, CDMX"}},
		{"mexico interior", "a Av. Revolución 1450 Int. 3, Col. San Ángel, 01000 Ciudad de México llega", []string{"street_address:Av. Revolución 1450 Int. 3, Col. San Ángel, 01000 Ciudad de México"}},
		{"argentina CPA", "Envío a Av. Cabildo 2230, C1428AAQ CABA y", []string{"street_address:Av. Cabildo 2230, C1428AAQ CABA"}},
		{"argentina piso depto", "Domicilio: Av. Corrientes 1847, piso 3 depto B, C1045AAH CABA\n", []string{"street_address:Av. Corrientes 1847, piso 3 depto B, C1045AAH CABA"}},
		{"colombia", "Dirección: Calle 45 # 12-34, Apto 501, Bogotá", []string{"street_address:Calle 45 # 12-34, Apto 501"}},
		{"colombia No.", "Carrera 15 No. 88-64, Oficina 302, Bogotá", []string{"street_address:Carrera 15 No. 88-64, Oficina 302"}},
		{"chile oficina", "Despachar a Av. Providencia 1208, Of. 402, Providencia, Santiago.", []string{"street_address:Av. Providencia 1208, Of. 402"}},
		{"india flat plot sector", "Delivery: Flat 302, Plot 14, Sector 21, Dwarka, New Delhi 110075\n", []string{"street_address:Flat 302, Plot 14, Sector 21, Dwarka, New Delhi 110075"}},
		{"india PIN", "Billing: No. 12, 4th Cross, Gandhi Nagar, Bengaluru, PIN 560009", []string{"street_address:No. 12, 4th Cross, Gandhi Nagar, Bengaluru, PIN 560009"}},
		{"india H.No.", "Address: H.No. 5-9-22, Lakdikapul, Hyderabad - 500004\n", []string{"street_address:H.No. 5-9-22, Lakdikapul, Hyderabad - 500004"}},
		{"invoice number is no unit chain", "Invoice No. 12345, Acme Corp, Springfield 12345 paid", nil},
		{"indonesia RT/RW", "Alamat: Jl. Melati No. 12 RT 03/RW 05, Kel. Cempaka Putih, Jakarta Pusat 10510\n", []string{"street_address:Jl. Melati No. 12 RT 03/RW 05, Kel. Cempaka Putih, Jakarta Pusat 10510"}},
		{"thai moo tambon", "Ship to: 55/3 Moo 2, Tambon Nong Prue, Amphoe Bang Lamung, Chon Buri 20150\n", []string{"street_address:55/3 Moo 2, Tambon Nong Prue, Amphoe Bang Lamung, Chon Buri 20150"}},
		{"thai soi", "Alt: 18 Soi Ari 4, Phaya Thai, Bangkok 10400\n", []string{"street_address:18 Soi Ari 4, Phaya Thai, Bangkok 10400"}},
		{"vietnam street before ward", "gửi tới 120 Nguyễn Trãi, Phường 2, Quận 5 nhé", []string{"street_address:120 Nguyễn Trãi"}},
		{"vietnam with code", "Địa chỉ: 25 Lý Thường Kiệt, Phường Hàng Bài, Quận Hoàn Kiếm, Hà Nội 100000\n", []string{"street_address:25 Lý Thường Kiệt, Phường Hàng Bài, Quận Hoàn Kiếm, Hà Nội 100000"}},
		{"hungary code city street", "Lakcím: 4026 Debrecen, Péterfia utca 12. 3/8.\nTelefon", []string{"street_address:4026 Debrecen, Péterfia utca 12. 3/8."}},
		{"us next line locality", "ROSALIND AMADI\n1187 Kessler Rd Apt 3C\nBethlehem, PA 18017\n\nRe:", []string{"street_address:1187 Kessler Rd Apt 3C\nBethlehem, PA 18017"}},
		{"po box space comma", "PO Box 8810 , Harrisburg PA 17105-8810\n", []string{"street_address:PO Box 8810 , Harrisburg PA 17105-8810"}},
		{"japan without postal code", "住所: 東京都世田谷区三軒茶屋2-14-7 グランドメゾン三茶302\n電話", []string{"street_address:東京都世田谷区三軒茶屋2-14-7 グランドメゾン三茶302"}},
		{"japan building of two words", "お届け先: 150-0041 東京都渋谷区神南1-19-11 パークウェースクエア2 4階\nお名前", []string{"street_address:150-0041 東京都渋谷区神南1-19-11 パークウェースクエア2 4階"}},
		{"japan prefecture police is no address", "大阪府警は24日、会社員を逮捕した。", nil},
		{"china", "收件地址为广东省深圳市南山区科技园南路18号2栋1503室，请注意查收。", []string{"street_address:广东省深圳市南山区科技园南路18号2栋1503室"}},
		{"china lane", "收货地址：上海市浦东新区张江路88弄3号502室\n", []string{"street_address:上海市浦东新区张江路88弄3号502室"}},
		{"china city without street", "上海市的天气很好，2号线很挤。", nil},
		{"korea road name", "배송지: 서울특별시 마포구 월드컵북로 396 누리꿈스퀘어 12층\n받는 분", []string{"street_address:서울특별시 마포구 월드컵북로 396 누리꿈스퀘어 12층"}},
		{"korea room", "주소: 부산광역시 해운대구 센텀중앙로 97, 1203호", []string{"street_address:부산광역시 해운대구 센텀중앙로 97, 1203호"}},
		{"korea city only", "서울 강남구에서 3시에 만나요", nil},
		{"thai script", "ที่อยู่: 99/8 หมู่ 4 ตำบลสุเทพ อำเภอเมืองเชียงใหม่ จังหวัดเชียงใหม่ 50200\n", []string{"street_address:99/8 หมู่ 4 ตำบลสุเทพ อำเภอเมืองเชียงใหม่ จังหวัดเชียงใหม่ 50200"}},
		{"arabic with code", "عنوان الشحن: شارع الملك فهد، حي العليا، الرياض 12214\n", []string{"street_address:شارع الملك فهد، حي العليا، الرياض 12214"}},
		{"arabic number first", "يسكن في ١٢ شارع التحرير، الدقي، الجيزة.", []string{"street_address:١٢ شارع التحرير"}},
		{"arabic street name alone", "شارع الحبيب بورقيبة هو الشارع الرئيسي في تونس.", nil},
		{"hebrew", "כתובת: רחוב הרצל 15, רמת גן 5252205\n", []string{"street_address:רחוב הרצל 15, רמת גן 5252205"}},
	})
}
