//! Traditional Chinese characters folded to their simplified forms, so that a query in one
//! script finds memories written in the other ("週會" finds "周会"). Both the documents and
//! the queries are folded (in [`super::tokenize`]), so the index holds one form.
//!
//! The table holds the common characters whose simplified form is one character and does not
//! depend on the word (characters such as 乾 and 著, whose form does, are left as written).

use std::collections::HashMap;
use std::sync::OnceLock;

/// Pairs of (traditional, simplified) characters, written one after the other.
const PAIRS: &[&str] = &[
    "並并亂乱亞亚來来倆俩倉仓個个們们倫伦偉伟側侧偵侦傑杰傘伞備备傳传債债傷伤傾倾僅仅僑侨價价儀仪億亿儉俭儘尽償偿優优儲储兒儿",
    "內内兩两冊册凍冻凱凯別别刪删則则剛刚創创劃划劇剧劉刘劍剑劑剂勁劲動动務务勝胜勞劳勢势勵励勸劝勻匀區区協协卻却厭厌厲厉參参",
    "員员問问啞哑啟启喚唤喪丧喫吃單单嗆呛嗎吗嘆叹嘗尝嘩哗噴喷噸吨嚇吓嚴严囑嘱圍围園园圓圆圖图團团執执堅坚報报場场塊块塵尘墊垫",
    "墜坠墳坟墾垦壇坛壓压壞坏壩坝壯壮壺壶壽寿夠够夢梦夾夹奪夺奮奋妝妆娛娱婁娄婦妇媽妈嬌娇嬰婴嬸婶孫孙學学宮宫寢寝實实寧宁審审",
    "寫写寬宽寵宠寶宝將将專专尋寻對对導导屆届層层屬属岡冈島岛峽峡崗岗嶺岭嶼屿嶽岳帥帅師师帳帐帶带幣币幫帮幾几庫库廁厕廈厦廚厨",
    "廟庙廠厂廢废廣广廳厅張张強强彈弹彌弥彎弯彙汇後后徑径從从徹彻悅悦惡恶惱恼愛爱態态慘惨慚惭慣惯慶庆憂忧憐怜憑凭憤愤憲宪憶忆",
    "懇恳應应懲惩懶懒懷怀懸悬懼惧戀恋戰战戲戏戶户拋抛掃扫掙挣掛挂揚扬換换揮挥損损搖摇搶抢撈捞撐撑撥拨撫抚撲扑撿捡擁拥擇择擊击",
    "擋挡擔担據据擠挤擬拟擱搁擲掷擴扩擺摆擾扰攔拦攜携攝摄攤摊攪搅攬揽敘叙敵敌數数斂敛斃毙斬斩斷断於于時时晉晋晝昼暈晕暉晖暢畅",
    "暫暂曆历曉晓曠旷曬晒書书會会東东條条棄弃棗枣棟栋棧栈棲栖楊杨楓枫業业極极榮荣構构槍枪槳桨樁桩樂乐樓楼標标樞枢樣样樸朴樹树",
    "樺桦橋桥機机橫横檔档檢检檯台檸柠櫃柜櫥橱櫻樱欄栏權权欖榄歐欧歡欢歲岁歷历歸归殘残殲歼殺杀殼壳毀毁毆殴氣气氫氢決决沒没況况",
    "涼凉淚泪淨净淵渊淺浅減减渦涡測测渾浑湊凑湯汤準准溝沟溫温滅灭滌涤滯滞滲渗滾滚滿满漁渔漢汉漬渍漲涨漸渐漿浆潑泼潔洁潛潜潤润",
    "潰溃澀涩澆浇澗涧澤泽澱淀濁浊濃浓濕湿濟济濤涛濫滥濱滨濺溅濾滤瀉泻瀏浏瀕濒灑洒灘滩灣湾災灾為为烏乌無无煉炼煙烟煥焕煩烦熱热",
    "熾炽燈灯燉炖燒烧燙烫燦灿燭烛燴烩爍烁爐炉爛烂爭争爺爷爾尔牆墙牽牵犢犊犧牺狀状狹狭猙狰猶犹獄狱獅狮獎奖獨独獲获獵猎獸兽獻献",
    "現现瑣琐瑩莹瑪玛環环瓊琼瓏珑甕瓮產产畢毕畫画異异當当疊叠瘋疯療疗癡痴癢痒癮瘾癱瘫發发皺皱盜盗盞盏盡尽監监盤盘盧卢眾众睜睁",
    "瞞瞒矯矫硯砚碩硕確确碼码磚砖礎础礙碍礦矿禍祸禪禅禮礼禿秃稅税種种稱称積积穩稳穫获窩窝窪洼窮穷窯窑竊窃競竞筆笔筍笋節节範范",
    "築筑篩筛簡简簽签簾帘籃篮籌筹籠笼籬篱糞粪糧粮糾纠紀纪約约紅红紋纹納纳紐纽純纯紗纱紙纸級级紛纷紡纺細细紳绅紹绍終终組组結结",
    "絕绝絞绞絡络給给統统絲丝絹绢綁绑經经綜综綠绿綢绸綫线維维綱纲網网綴缀綿绵緊紧緒绪線线緞缎締缔緣缘編编緩缓緯纬練练緻致縣县",
    "縫缝縮缩縱纵總总績绩繃绷繞绕繡绣繩绳繪绘繫系繭茧繳缴繼继續续纏缠纖纤罰罚罵骂罷罢羅罗義义習习翹翘聖圣聞闻聯联聰聪聲声聳耸",
    "職职聽听肅肃脈脉脹胀腎肾腦脑腫肿腳脚腸肠膚肤膠胶膩腻膽胆臉脸臘腊臟脏臨临臺台與与興兴舉举舊旧艙舱艦舰莊庄莖茎華华萊莱萬万",
    "葉叶蓋盖蓮莲蔣蒋蔥葱蕩荡蕭萧薦荐薩萨藍蓝藝艺藥药蘆芦蘇苏蘋苹蘭兰蘿萝處处虛虚號号虧亏蝦虾螞蚂蟲虫蠶蚕術术衛卫衝冲裏里補补",
    "裝装裡里製制複复褲裤襪袜襯衬見见規规視视親亲覺觉覽览觀观觸触訂订計计訊讯討讨訓训記记訪访設设許许訴诉診诊評评詞词試试詩诗",
    "話话該该詳详誇夸認认語语誠诚誤误說说誰谁課课調调談谈請请論论諸诸謊谎謎谜講讲謝谢證证識识譯译議议護护讀读變变讓让讚赞豈岂",
    "豐丰豬猪貓猫貝贝負负財财貧贫貨货販贩貫贯責责貴贵買买貸贷費费貼贴貿贸賀贺資资賊贼賓宾賠赔賣卖質质賬账賭赌賴赖賺赚購购賽赛",
    "贈赠贊赞趕赶趙赵趨趋踐践蹤踪躍跃車车軌轨軍军軟软較较載载輕轻輪轮輸输轉转轎轿辦办辭辞辯辩農农這这連连週周進进遊游運运過过",
    "達达違违遠远適适遲迟遷迁選选遺遗遼辽邁迈還还邊边鄉乡鄧邓鄭郑鄰邻醜丑醫医醬酱釋释釘钉針针釣钓鈔钞鈴铃銀银銅铜銳锐銷销鋒锋",
    "鋪铺鋼钢錄录錢钱錦锦錨锚錫锡錯错錶表鍊炼鍋锅鍛锻鍵键鍾钟鎖锁鎮镇鏈链鏡镜鐘钟鐵铁鑰钥鑽钻長长門门閃闪閉闭開开閒闲間间閱阅",
    "闆板關关陣阵陰阴陳陈陸陆陽阳隊队階阶際际隨随險险隱隐隻只雖虽雙双雜杂雞鸡離离難难雲云電电霧雾靈灵靜静響响頁页頂顶項项順顺",
    "須须預预頓顿領领頭头頻频顆颗題题額额顏颜願愿類类顧顾顯显風风颱台飛飞飯饭飲饮飽饱餅饼養养餘余館馆饅馒馬马馮冯駕驾騎骑騙骗",
    "驅驱驕骄驗验驚惊驢驴髒脏體体髮发鬆松鬥斗鬧闹魚鱼鮮鲜鳥鸟鳳凤鴨鸭鴿鸽鵝鹅鶴鹤鷹鹰鹼碱鹽盐麗丽麥麦麵面麼么黃黄點点黨党齊齐",
    "齋斋齒齿齡龄龍龙龐庞龜龟",
];

fn table() -> &'static HashMap<char, char> {
    static TABLE: OnceLock<HashMap<char, char>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut map = HashMap::new();
        for line in PAIRS {
            let chars: Vec<char> = line.chars().collect();
            for pair in chars.chunks_exact(2) {
                map.insert(pair[0], pair[1]);
            }
        }
        map
    })
}

/// The simplified form of a traditional character; any other character as it is.
pub(super) fn simplified(c: char) -> char {
    if (c as u32) < 0x3400 {
        return c;
    }
    table().get(&c).copied().unwrap_or(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traditional_characters_fold_and_others_stay() {
        let fold = |s: &str| s.chars().map(simplified).collect::<String>();
        assert_eq!(fold("週會體檢護照過期"), "周会体检护照过期");
        assert_eq!(fold("周会 Rust 乾隆 著作"), "周会 Rust 乾隆 著作");
    }

    #[test]
    fn no_simplified_character_is_folded_again() {
        let map = table();
        assert!(map.len() > 800, "{}", map.len());
        for (t, s) in map {
            assert_ne!(t, s);
            assert!(!map.contains_key(s), "{t} → {s} → …");
        }
    }
}
